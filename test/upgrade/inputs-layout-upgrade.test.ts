import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadMigrations } from "../../src/db/schema.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";

const tempDir = useTempDirs();
const NOW = Date.now();
const STATES = ["accepted", "claimed", "completed", "interrupted"] as const;
/** This pid with a start time it never had: a lease holder judged dead. */
const DEAD_STARTED = -1;

// An empty schema-6 layout is finished by dropping its old tables, as the upgrade's last step.
const FINISH_EMPTY_LAYOUT = `DROP TABLE transcript_events_v6; DROP TABLE transcript_identities_v6;
  DROP TABLE transcript_blob_refs_v6;`;

type Row = Record<string, string | number | null>;

/** The old layout's row `i`: every state, with and without leases, outcomes and optional fields. */
function oldRow(i: number): Row {
  const state = STATES[i % 4] as string;
  const leased = state !== "accepted" || i % 8 === 4;
  return {
    arrival_seq: i * 3 + 1, // gaps, as left by pruned inputs
    input_id: `0b7e${String(i).padStart(4, "0")}-5c1a-4d2e-9f00-${String(i).padStart(12, "0")}`,
    session_key: `agent:main:k${i % 3}`,
    idempotency_key: `m${i}`,
    payload_json: JSON.stringify({ text: `message ${i}` }),
    channel: i % 2 === 0 ? "telegram" : null,
    conversation_id: i % 5 === 0 ? `c${i}` : null,
    received_at: NOW - 100_000 + i,
    accepted_at: NOW - 90_000 + i,
    state,
    lease_owner: leased ? `gw${i % 2}` : null,
    lease_owner_pid: leased ? process.pid : null,
    lease_owner_started: leased ? DEAD_STARTED : null,
    lease_expires_at: state === "claimed" ? NOW - 1_000 : null,
    attempts: leased ? 1 + (i % 3) : 0,
    completed_at: state === "completed" ? NOW - 50_000 + i : null,
    outcome_json:
      state === "completed"
        ? JSON.stringify({ sessionId: null, eventIds: [`e${i}`], deliveryIds: [], data: i })
        : null,
  };
}

/** A home whose agent database has the migrations before the new inputs layout, and old rows. */
function homeBeforeLayout(count: number): { home: string; dbPath: string; rows: Row[] } {
  const home = tempDir();
  openStateHome({ home }).agent("main");
  const dbPath = join(home, "agents", "main", "agent", "agent.sqlite");
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${dbPath}${suffix}`, { force: true });
  const migrations = loadMigrations("agent");
  const before = migrations.findIndex((m) => m.name === "inputs_fewer_pages");
  expect(before).toBeGreaterThan(0);
  const raw = openRawSqlite(dbPath);
  raw.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
    sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const record = raw.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?, 0)");
  for (const m of migrations.slice(0, before)) {
    raw.exec(m.sql);
    record.run(m.version, m.name, m.sha256);
  }
  raw.exec(FINISH_EMPTY_LAYOUT);
  raw.exec(`PRAGMA user_version = ${before}`);
  const written = Array.from({ length: count }, (_, i) => oldRow(i));
  const columns = Object.keys(written[0] as Row);
  const insert = raw.prepare(
    `INSERT INTO inputs (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
  );
  raw.exec("BEGIN");
  for (const row of written) insert.run(row);
  raw.exec("COMMIT");
  const rows = raw.prepare("SELECT * FROM inputs ORDER BY arrival_seq").all() as Row[];
  raw.close();
  return { home, dbPath, rows };
}

describe("inputs in the layout before derived ids", () => {
  it("upgrade with every input's state, lease and outcome intact, and keep working", () => {
    const { home, dbPath, rows } = homeBeforeLayout(40);
    expect(rows).toHaveLength(40);
    const state = openStateHome({ home });
    state.agent("main");
    const raw = openRawSqlite(dbPath, { readonly: true });
    const after = raw.prepare("SELECT * FROM inputs ORDER BY arrival_seq").all() as Row[];
    raw.close();
    // Every old column as it was; the new ones say: a chosen id, in the open-inputs index.
    expect(after).toEqual(
      rows.map((r) => ({ ...r, id_chosen: 1, claim_unlisted: 0, unlisted_from: r.arrival_seq })),
    );
    const inputs = state.inputs;
    for (const r of rows) {
      const got = inputs.get("main", String(r.input_id));
      expect(got?.state).toBe(r.state);
      expect(got?.lease?.owner ?? null).toBe(r.lease_owner);
      expect(got?.outcome ?? null).toEqual(
        r.outcome_json ? JSON.parse(String(r.outcome_json)) : null,
      );
    }
    // The old claimed inputs of a key are found, their dead owners' leases lapsed: interrupted.
    const key = "agent:main:k1";
    const claimedBefore = rows.filter((r) => r.session_key === key && r.state === "claimed");
    const interruptedBefore = rows.filter(
      (r) => r.session_key === key && r.state === "interrupted",
    );
    const recovered = inputs.recover("main", key).interrupted.map((i) => i.inputId);
    expect(new Set(recovered)).toEqual(
      new Set([...claimedBefore, ...interruptedBefore].map((r) => r.input_id)),
    );
    // The oldest waiting input of a key is claimed first; new inputs arrive after the old ones.
    const waiting = rows.find((r) => r.session_key === "agent:main:k0" && r.state === "accepted");
    const [claimed] = inputs.claim("main", "agent:main:k0", "gw", { leaseMs: 1000 });
    expect(claimed?.inputId).toBe(waiting?.input_id);
    const fresh = inputs.accept(
      "main",
      "agent:main:k0",
      { idempotencyKey: "new", payload: 1 },
      { claim: { owner: "gw", leaseMs: 1000 } },
    ).input;
    expect(fresh.arrivalSeq).toBe(Number(rows.at(-1)?.arrival_seq) + 1);
    expect(inputs.complete("main", fresh.inputId, "gw").state).toBe("completed");
    const retry = inputs.accept("main", "agent:main:k2", { idempotencyKey: "m2", payload: 0 });
    expect(retry.duplicate).toBe(true);
    expect(retry.input.inputId).toBe(rows[2]?.input_id);
    state.close();
  });
});

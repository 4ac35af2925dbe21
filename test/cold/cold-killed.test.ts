import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { ArchiveReader } from "../../src/transcript/cold-archive.js";
import { requireBuild } from "../support/built.js";

/** Random kills; `npm run test:trials` runs 20. */
const TRIALS = Number(process.env.AGENTSTATE_COLD_KILL_TRIALS ?? 5);
const AGENT = "main";
const SESSIONS = 12;
/** Events of odd sessions; even ones have twice as many, so their search rows go to the cold index thread. */
const EVENTS = 150;
const CHILD = fileURLToPath(new URL("./move-child.mjs", import.meta.url));
const AGENT_DIR = join("agents", AGENT, "agent");
const tempDir = useTempDirs();

interface Row {
  seq: number;
  event_id: string;
  event_json: string;
  created_at: number;
  idempotency_key: string | null;
}

let template: string;
/** Each session's rows as stored before any move, read with SQL. */
let original: Map<string, Row[]>;
/** How long a whole run of the child takes after it is ready, measured by a first full run. */
let runMs = 1000;

function image(seed: string): string {
  return Buffer.concat(
    Array.from({ length: 800 }, (_, i) => createHash("sha256").update(`${seed}/${i}`).digest()),
  ).toString("base64");
}

function buildTemplate(dir: string): void {
  const home = openStateHome({ home: dir });
  const agent = home.agent(AGENT);
  for (let s = 0; s < SESSIONS; s++) {
    const id = `session-${String(s).padStart(2, "0")}`;
    const text = (t: string) => ({ type: "message", message: { role: "user", content: t } });
    agent.transcripts.appendMany(id, [
      text(`zebra number ${s}`),
      { type: "message", message: { role: "user", content: [{ type: "image", data: image(id) }] } },
      ...Array.from({ length: s % 2 === 0 ? EVENTS * 2 : EVENTS }, (_, i) =>
        text(`line ${i} of ${id} 雪の日 ${"x".repeat(i)}`),
      ),
    ]);
  }
  home.close();
}

function readRows(home: string): Map<string, Row[]> {
  const raw = openRawSqlite(join(home, AGENT_DIR, "agent.sqlite"), { readonly: true });
  try {
    const ids = raw.prepare("SELECT session_id FROM sessions ORDER BY session_id").pluck().all();
    const rows = raw.prepare(
      `SELECT seq, event_id, event_json, created_at, idempotency_key FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?) ORDER BY seq`,
    );
    return new Map(ids.map((id) => [id as string, rows.all(id) as Row[]]));
  } finally {
    raw.close();
  }
}

function runChild(
  home: string,
  killAfterMs: number | null,
): Promise<{ killed: boolean; ms: number }> {
  const child: ChildProcess = spawn(process.execPath, [CHILD, home, AGENT], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let killed = false;
  let readyAt = 0;
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    if (line !== "ready") return;
    readyAt = Date.now();
    if (killAfterMs !== null) {
      setTimeout(() => {
        killed = child.kill("SIGKILL");
      }, killAfterMs);
    }
  });
  return new Promise((resolve, reject) =>
    child.on("close", (status) => {
      if (!killed && status !== 0) reject(new Error(`child exited with ${status}`));
      resolve({ killed, ms: Date.now() - readyAt });
    }),
  );
}

/**
 * Every event exactly once: a session is either hot with its rows (plus, for every third
 * session, the one event the child appends) or cold with no hot rows and an archive whose
 * SHA-256 is the one recorded and whose rows are the original ones.
 */
function assertWhole(home: string, trial: number, maxAppended: number): { cold: number } {
  const raw = openRawSqlite(join(home, AGENT_DIR, "agent.sqlite"), { readonly: true });
  const hot = readRows(home);
  let cold = 0;
  try {
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    const coldRows = raw.prepare(
      `SELECT c.* FROM cold_sessions c JOIN sessions s USING (session_no) WHERE s.session_id = ?`,
    );
    const ids = [...original.keys()];
    ids.forEach((id, i) => {
      const expected = original.get(id) as Row[];
      const rows = hot.get(id) as Row[];
      const row = coldRows.get(id) as
        | { archive_path: string; sha256: string; events: number }
        | undefined;
      const where = `trial ${trial}, ${id}`;
      if (row === undefined) {
        expect(rows.slice(0, expected.length), where).toEqual(expected);
        const extra = rows.slice(expected.length);
        expect(extra.length, where).toBeLessThanOrEqual(i % 3 === 0 ? maxAppended : 0);
        for (const event of extra) expect(event.event_json, where).toContain("after the cold");
        return;
      }
      cold++;
      expect(rows, where).toEqual([]);
      const bytes = readFileSync(join(home, row.archive_path));
      expect(createHash("sha256").update(bytes).digest("hex"), where).toBe(row.sha256);
      const reader = new ArchiveReader((o, l) => bytes.subarray(o, o + l), bytes.length);
      const archived = [...reader.eventsAfter(0)].map((e) => ({
        seq: e.seq,
        event_id: e.eventId,
        event_json: e.eventJson,
        created_at: e.createdAt,
        idempotency_key: e.idempotencyKey,
      }));
      expect(archived, where).toEqual(expected);
      expect(reader.blobs().length, where).toBe(1);
    });
  } finally {
    raw.close();
  }
  // Every session still found by search, hot or cold, once.
  const state = openStateHome({ home, readonly: true });
  const hits = state.agent(AGENT).search.search("zebra", { limit: 100 });
  expect(hits.map((h) => h.sessionId).sort()).toEqual([...original.keys()]);
  state.close();
  return { cold };
}

function referencedFiles(home: string): string[] {
  const raw = openRawSqlite(join(home, AGENT_DIR, "agent.sqlite"), { readonly: true });
  try {
    return (raw.prepare("SELECT archive_path FROM cold_sessions").pluck().all() as string[])
      .map((p) => p.split("/").at(-1) as string)
      .sort();
  } finally {
    raw.close();
  }
}

beforeAll(async () => {
  requireBuild();
  template = mkdtempSync(join(tmpdir(), "agentstate-cold-"));
  buildTemplate(template);
  original = readRows(template);
  const home = tempDir();
  cpSync(template, home, { recursive: true });
  runMs = (await runChild(home, null)).ms;
}, 120_000);
afterAll(() => rmSync(template, { recursive: true, force: true }));

describe("a move to cold storage killed with SIGKILL", () => {
  it(
    "loses and doubles nothing wherever it stopped, and the next run finishes it cleanly",
    async () => {
      let partial = 0;
      for (let trial = 0; trial < TRIALS; trial++) {
        const home = tempDir();
        cpSync(template, home, { recursive: true });
        const { killed } = await runChild(home, Math.floor(Math.random() * runMs));
        const { cold } = assertWhole(home, trial, 1);
        if (killed && cold > 0 && cold < SESSIONS) partial++;
        await runChild(home, null);
        assertWhole(home, trial, 2);
        // Beside the archives, only the cold index file (no journal a killed write left).
        const files = readdirSync(join(home, AGENT_DIR, "cold")).sort();
        expect(files, `trial ${trial}`).toEqual([...referencedFiles(home), "index.sqlite"].sort());
      }
      // Kills land inside the run, not only before or after it.
      if (TRIALS >= 5) expect(partial).toBeGreaterThan(0);
    },
    120_000 + TRIALS * 30_000,
  );
});

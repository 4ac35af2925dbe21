import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../db/database.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";
import { planMigration } from "./plan.js";
import { headerLine, messageLine } from "./test-support/legacy-lines.js";

const tempDir = useTempDirs();
const noBackup = async () => "(test: no backup)";
const SESSION = "0b5e2f4a-6c1d-4e8f-9a7b-3c2d1e0f9a8b";
const PATH = `agents/main/sessions/${SESSION}.jsonl`;

/** A legacy home whose one transcript holds `bad` (raw bytes) as its line `badLine`. */
function homeWithBadLine(bad: Buffer, badLine: number, goodMessages = 8): string {
  const home = join(tempDir(), "home");
  mkdirSync(join(home, "agents/main/sessions"), { recursive: true });
  const lines: Buffer[] = [Buffer.from(headerLine(SESSION))];
  let parent: string | null = null;
  for (let i = 1; i <= goodMessages; i++) {
    if (lines.length + 1 === badLine) lines.push(bad);
    lines.push(Buffer.from(messageLine(`m${i}`, parent, `message ${i}`)));
    parent = `m${i}`;
  }
  writeFileSync(join(home, PATH), Buffer.concat(lines.flatMap((l) => [l, Buffer.from("\n")])));
  return home;
}

/** The file's bytes of 1-based line `n`, without its newline: the oracle for the quarantine. */
function lineOfFile(file: Buffer, n: number): Buffer {
  let start = 0;
  for (let i = 1; i < n; i++) start = file.indexOf(0x0a, start) + 1;
  const end = file.indexOf(0x0a, start);
  return file.subarray(start, end === -1 ? file.length : end);
}

/** Ids of the records a transcript file holds that parse as JSON objects with an id. */
function goodIds(file: Buffer): string[] {
  const ids: string[] = [];
  for (const text of file.toString("latin1").split("\n")) {
    try {
      const value = JSON.parse(text) as { id?: unknown };
      if (typeof value.id === "string") ids.push(value.id);
    } catch {
      // a broken line: not a record
    }
  }
  return ids;
}

function eventIds(home: string): string[] {
  const db = openDatabase({
    path: join(home, "agents/main/agent/agent.sqlite"),
    role: "agent",
    readonly: true,
  });
  try {
    return db
      .prepare<{ id: string }>(
        "SELECT event_id AS id FROM agentstate_events_v1 WHERE session_id = ? ORDER BY seq",
      )
      .all(SESSION)
      .map((row) => row.id);
  } finally {
    db.close();
  }
}

interface QuarantineRow {
  source_path: string;
  line_number: number;
  reason: string;
  line_bytes: Uint8Array;
  run_id: string;
}

function quarantineRows(home: string): QuarantineRow[] {
  const db = openDatabase({
    path: join(home, "state/state.sqlite"),
    role: "global",
    readonly: true,
  });
  try {
    return db
      .prepare<QuarantineRow>(
        "SELECT source_path, line_number, reason, line_bytes, run_id FROM migration_quarantine ORDER BY line_number",
      )
      .all();
  } finally {
    db.close();
  }
}

describe("doctor --fix --quarantine", () => {
  it("without it a broken line keeps the source partial, and the plan counts only what is left", async () => {
    const home = homeWithBadLine(Buffer.from('{"type":"message","id":"broken'), 5);
    const first = await runDoctorFix({ home, backup: noBackup });
    expect(first.status).toBe("partial");
    expect(first.sources[0]?.error).toContain("--quarantine");
    expect(existsSync(join(home, PATH))).toBe(true);

    // Every good record is in SQLite now: nothing is left to import from this file.
    const after = planMigration(home);
    expect(after.sources[0]).toMatchObject({ path: PATH, action: "import", records: 0 });
    expect(after.summary.records).toBe(0);

    // A writer adds two records: exactly those two are left.
    const appended = [messageLine("m9", "m8", "nine"), messageLine("m10", "m9", "ten")];
    appendFileSync(join(home, PATH), `${appended.join("\n")}\n`);
    const file = readFileSync(join(home, PATH));
    const inDb = new Set(eventIds(home));
    const left = goodIds(file).filter((id) => !inDb.has(id)).length;
    expect(left).toBe(2);
    expect(planMigration(home).summary.records).toBe(left);

    const second = await runDoctorFix({ home, backup: noBackup });
    expect(second.status).toBe("partial");
    expect(planMigration(home).summary.records).toBe(0);
    expect(eventIds(home)).toEqual(goodIds(file));
  });

  it("stores the broken line byte for byte, imports the rest once and removes the source", async () => {
    const home = homeWithBadLine(Buffer.from('{"type":"message","id":"broken'), 5);
    await runDoctorFix({ home, backup: noBackup });
    const file = readFileSync(join(home, PATH));

    const report = await runDoctorFix({ home, backup: noBackup, quarantine: true });
    expect(report.status).toBe("succeeded");
    expect(report.sources[0]).toMatchObject({ status: "imported", removed: true, quarantined: 1 });
    expect(existsSync(join(home, PATH))).toBe(false);
    expect(eventIds(home)).toEqual(goodIds(file));
    expect(new Set(eventIds(home)).size).toBe(eventIds(home).length);

    const rows = quarantineRows(home);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ source_path: PATH, line_number: 5, run_id: report.runId });
    expect(rows[0]?.reason).toMatch(/invalid JSON/);
    expect(Buffer.from(rows[0]?.line_bytes as Uint8Array).equals(lineOfFile(file, 5))).toBe(true);

    const again = await runDoctorFix({ home, backup: noBackup, quarantine: true });
    expect(again.status).toBe("nothing-to-do");
    expect(quarantineRows(home)).toHaveLength(1);
  });

  it("keeps a line of invalid UTF-8 as its bytes, not as U+FFFD, and never twice", async () => {
    const bad = Buffer.concat([
      Buffer.from('{"type":"message","id":"u1","note":"'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}'),
    ]);
    const home = homeWithBadLine(bad, 3);
    const file = readFileSync(join(home, PATH));
    const plain = await runDoctorFix({ home, backup: noBackup });
    expect(plain.status).toBe("partial");
    expect(plain.sources[0]?.problems[0]).toMatchObject({ line: 3, reason: "invalid UTF-8" });

    const kept = await runDoctorFix({
      home,
      backup: noBackup,
      quarantine: true,
      keepSources: true,
    });
    expect(kept.status).toBe("succeeded");
    expect(existsSync(join(home, PATH))).toBe(true);
    // The same bytes with a new modification time are a new source: the rerun imports it again.
    utimesSync(join(home, PATH), new Date(), new Date(Date.now() + 5000));
    const rerun = await runDoctorFix({ home, backup: noBackup, quarantine: true });
    expect(rerun.status).toBe("succeeded");
    expect(existsSync(join(home, PATH))).toBe(false);

    const rows = quarantineRows(home);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ line_number: 3, reason: "invalid UTF-8", run_id: kept.runId });
    const bytes = Buffer.from(rows[0]?.line_bytes as Uint8Array);
    expect(bytes.equals(lineOfFile(file, 3))).toBe(true);
    expect(bytes.includes(Buffer.from([0xff, 0xfe]))).toBe(true);
    expect(eventIds(home)).toEqual(goodIds(file).filter((id) => id !== "u1"));
  });
});

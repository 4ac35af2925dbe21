import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDoctorFix } from "../../src/doctor/fix.js";
import { headerLine, messageLine } from "../../src/doctor/test-support/legacy-lines.js";
import { openStateHome } from "../../src/home.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "agentstate-grouped-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Live transcripts of an agent, by session id, with their record counts (non-blank lines). */
function transcripts(sessionsDir: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const name of readdirSync(sessionsDir)) {
    if (!name.endsWith(".jsonl")) continue;
    const lines = readFileSync(join(sessionsDir, name), "utf8").split("\n");
    out.set(name.slice(0, -".jsonl".length), lines.filter((l) => l.trim() !== "").length);
  }
  return out;
}

describe("doctor --fix imports short transcripts of one agent in shared transactions", () => {
  it("rolls a group back when one of its files fails, then imports the others once each", async () => {
    const home = join(root, "home");
    generateLegacyHome(home, {
      agents: 1,
      sessions: 40,
      events: 8,
      deleted: 0,
      cronJobs: 0,
      cronRuns: 0,
      daycare: false,
    });
    const sessionsDir = join(home, "agents/main/sessions");
    const expected = transcripts(sessionsDir);
    expect(expected.size).toBe(40);
    // A file that disappears after the plan (here: during the backup step) fails its import in
    // the middle of a group of short transcripts.
    const vanished = [...expected.keys()].sort()[20] as string;
    const started = new Map<string, number>();
    const report = await runDoctorFix({
      home,
      onProgress: ({ source }) => started.set(source.path, (started.get(source.path) ?? 0) + 1),
      backup: async () => {
        rmSync(join(sessionsDir, `${vanished}.jsonl`));
        return "(test: no backup)";
      },
    });

    const bySession = new Map(
      report.sources
        .filter((s) => s.kind === "transcript")
        .map((s) => [s.path.split("/").at(-1)?.replace(".jsonl", "") as string, s]),
    );
    expect(bySession.get(vanished)?.status).toBe("failed");
    expect(bySession.get(vanished)?.error).toMatch(/ENOENT|no such file/);
    expect(report.status).toBe("partial");
    expect(report.totals.failed).toBe(1);
    // The 40 short files formed one group: its first attempt ran up to the vanished file and was
    // rolled back, then every file was imported again on its own.
    for (const sessionId of expected.keys()) {
      const times = started.get(`agents/main/sessions/${sessionId}.jsonl`);
      expect(times, sessionId).toBe(sessionId <= vanished ? 2 : 1);
    }

    const state = openStateHome({ home, create: false });
    try {
      const db = state.agent("main").db;
      const counts = new Map(
        db
          .prepare<{ session_id: string; n: number; max_seq: number }>(
            "SELECT session_id, count(*) AS n, max(seq) AS max_seq FROM agentstate_events_v1 GROUP BY session_id",
          )
          .all()
          .map((row) => [row.session_id, row]),
      );
      expect(counts.has(vanished)).toBe(false);
      for (const [sessionId, records] of expected) {
        if (sessionId === vanished) continue;
        expect(bySession.get(sessionId)).toMatchObject({ status: "imported", records });
        // Exactly once: the rolled-back first attempt left nothing behind.
        expect(counts.get(sessionId)).toEqual({
          session_id: sessionId,
          n: records,
          max_seq: records,
        });
        expect(existsSync(join(sessionsDir, `${sessionId}.jsonl`))).toBe(false);
      }
      const total = db.prepare<{ n: number }>("SELECT count(*) AS n FROM transcript_events").get();
      expect(total?.n).toBe([...expected].reduce((n, [id, r]) => (id === vanished ? n : n + r), 0));
    } finally {
      state.close();
    }
  });

  it("merges a session's archive and its live file in one group, and ends only the archived-only session", async () => {
    const home = join(root, "archives");
    const dir = join(home, "agents/main/sessions");
    mkdirSync(dir, { recursive: true });
    const live = "5e55a0a0-0000-4000-8000-000000000001";
    const gone = "5e55a0a0-0000-4000-8000-000000000002";
    const first = [
      headerLine(live),
      messageLine("a1", null, "one"),
      messageLine("a2", "a1", "two"),
    ];
    const later = [messageLine("a3", "a2", "three"), messageLine("a4", "a3", "four")];
    // A reset archive holding the start of the conversation, and the live file holding all of it.
    writeFileSync(
      join(dir, `${live}.jsonl.reset.2026-03-01T09-30-00.000Z`),
      `${first.join("\n")}\n`,
    );
    writeFileSync(join(dir, `${live}.jsonl`), `${[...first, ...later].join("\n")}\n`);
    const goneLines = [headerLine(gone), messageLine("b1", null, "bye")];
    writeFileSync(
      join(dir, `${gone}.jsonl.deleted.2026-03-02T10-00-00.000Z`),
      `${goneLines.join("\n")}\n`,
    );

    const started = new Map<string, number>();
    const report = await runDoctorFix({
      home,
      backup: async () => "(test: no backup)",
      onProgress: ({ source }) => started.set(source.path, (started.get(source.path) ?? 0) + 1),
    });
    expect(report.status).toBe("succeeded");
    expect([...started.values()]).toEqual([1, 1, 1]);
    const transcripts = report.sources.filter((s) => s.kind.startsWith("transcript"));
    expect(
      transcripts.map((s) => [s.path.split("/").at(-1), s.status, s.records, s.alreadyPresent]),
    ).toEqual([
      [`${live}.jsonl.reset.2026-03-01T09-30-00.000Z`, "imported", 3, 0],
      [`${gone}.jsonl.deleted.2026-03-02T10-00-00.000Z`, "imported", 2, 0],
      [`${live}.jsonl`, "imported", 5, 3],
    ]);
    expect(readdirSync(dir)).toEqual([]);

    const state = openStateHome({ home, create: false });
    try {
      const db = state.agent("main").db;
      const rows = db
        .prepare<{ session_id: string; n: number; ended_at: number | null }>(
          `SELECT s.session_id, count(e.seq) AS n, s.ended_at FROM agentstate_sessions_v1 s
             LEFT JOIN agentstate_events_v1 e USING (session_id) GROUP BY s.session_id ORDER BY s.session_id`,
        )
        .all();
      expect(rows).toEqual([
        { session_id: live, n: 5, ended_at: null },
        { session_id: gone, n: 2, ended_at: Date.parse("2026-03-02T10:00:00.000Z") },
      ]);
    } finally {
      state.close();
    }
  });
});

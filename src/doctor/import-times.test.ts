import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";

const tempDir = useTempDirs();
const noBackup = async () => "(test)";
const SESSIONS = "agents/main/sessions";

interface Line {
  type: string;
  id: string;
  timestamp: string;
  [key: string]: unknown;
}

function transcript(sessionId: string, start: string, ...later: string[]): Line[] {
  const lines: Line[] = [
    { type: "session", version: 3, id: sessionId, timestamp: start, cwd: "/w" },
  ];
  later.forEach((timestamp, i) => {
    lines.push({
      type: "message",
      id: `${sessionId.slice(0, 4)}-${i}`,
      parentId: i === 0 ? null : `${sessionId.slice(0, 4)}-${i - 1}`,
      timestamp,
      message: { role: "user", content: [{ type: "text", text: `turn ${i}` }] },
    });
  });
  return lines;
}

function writeHome(files: Record<string, string>): string {
  const dir = join(tempDir(), "home");
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  return dir;
}

const jsonl = (lines: readonly unknown[]) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;

interface SessionTimes {
  created_at: number;
  updated_at: number;
  ended_at: number | null;
}

function storedTimes(home: string, sessionId: string): SessionTimes | undefined {
  const state = openStateHome({ home, create: false });
  try {
    return state
      .agent("main", { create: false })
      .db.prepare<SessionTimes>(
        "SELECT created_at, updated_at, ended_at FROM agentstate_sessions_v1 WHERE session_id = ?",
      )
      .get(sessionId);
  } finally {
    state.close();
  }
}

function entryUpdatedAt(home: string, key: string): number | undefined {
  const state = openStateHome({ home, create: false });
  try {
    return state
      .agent("main", { create: false })
      .db.prepare<{ updated_at: number }>(
        "SELECT updated_at FROM session_entries WHERE session_key = ?",
      )
      .get(key)?.updated_at;
  } finally {
    state.close();
  }
}

/** What the files say, computed here from the lines written, not by the importer. */
function expectedTimes(
  lines: readonly Line[],
  indexUpdatedAt: number | null,
  endedAt: number | null,
) {
  const created = Date.parse((lines[0] as Line).timestamp);
  const last = Date.parse((lines.at(-1) as Line).timestamp);
  return {
    created_at: created,
    updated_at: Math.max(last, indexUpdatedAt ?? 0),
    ended_at: endedAt,
  };
}

describe("doctor --fix keeps the sessions' own times", () => {
  // "0a…" sorts before sessions.json (imported after its transcript), "zz…" after it.
  const LIVE = "0a7e5c1d-live";
  const LATE = "zz-index-later";
  const DELETED = "1b2c3d4e-deleted";
  const RESET = "2c3d4e5f-reset";
  const PARTLY = "3d4e5f60-partly";
  const live = transcript(
    LIVE,
    "2026-01-05T10:00:00.000Z",
    "2026-01-05T10:01:00.000Z",
    "2026-01-05T10:30:00.000Z",
  );
  const late = transcript(LATE, "2026-01-06T08:00:00.000Z", "2026-01-06T08:05:00.000Z");
  const deleted = transcript(DELETED, "2026-01-20T00:00:00.000Z", "2026-01-20T01:00:00.000Z");
  const reset = transcript(
    RESET,
    "2025-12-01T07:00:00.000Z",
    "2025-12-01T07:10:00.000Z",
    "2025-12-02T09:00:00.000Z",
  );
  const partly = transcript(
    PARTLY,
    "2026-01-10T00:00:00.000Z",
    "2026-01-10T00:01:00.000Z",
    "2026-01-11T00:00:00.000Z",
  );
  const index = {
    "agent:main:main": { sessionId: LIVE, updatedAt: Date.parse("2026-01-05T10:20:00.000Z") },
    "agent:main:late": { sessionId: LATE, updatedAt: Date.parse("2026-01-06T09:00:00.000Z") },
    "agent:main:partly": { sessionId: PARTLY, updatedAt: Date.parse("2026-01-10T00:00:30.000Z") },
  };
  const files = {
    [`${SESSIONS}/sessions.json`]: JSON.stringify(index),
    [`${SESSIONS}/${LIVE}.jsonl`]: jsonl(live),
    [`${SESSIONS}/${LATE}.jsonl`]: jsonl(late),
    [`${SESSIONS}/${DELETED}.jsonl.deleted.2026-02-01T12-00-00.000Z`]: jsonl(deleted),
    [`${SESSIONS}/${RESET}.jsonl.reset.not-a-time`]: jsonl(reset),
    // A broken line in the middle: the file imports partly and is kept for another run.
    [`${SESSIONS}/${PARTLY}.jsonl`]: `${jsonl(partly.slice(0, 2))}{"broken\n${jsonl(partly.slice(2))}`,
  };

  function expectAll(home: string): void {
    expect(storedTimes(home, LIVE)).toEqual(
      expectedTimes(live, index["agent:main:main"].updatedAt, null),
    );
    expect(storedTimes(home, LATE)).toEqual(
      expectedTimes(late, index["agent:main:late"].updatedAt, null),
    );
    expect(storedTimes(home, PARTLY)).toEqual(
      expectedTimes(partly, index["agent:main:partly"].updatedAt, null),
    );
    // Archived sessions end when they were archived (the file name's time), else at their last event.
    expect(storedTimes(home, DELETED)).toEqual(
      expectedTimes(deleted, null, Date.parse("2026-02-01T12:00:00.000Z")),
    );
    expect(storedTimes(home, RESET)).toEqual(
      expectedTimes(reset, null, Date.parse((reset.at(-1) as Line).timestamp)),
    );
    for (const [key, entry] of Object.entries(index)) {
      expect(entryUpdatedAt(home, key)).toBe(entry.updatedAt);
    }
  }

  it("takes created, last-activity and end times from the files, not the time of the import", async () => {
    const home = writeHome(files);
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.status).toBe("partial");
    expectAll(home);
  });

  it("keeps them on a rerun over the partly imported file", async () => {
    const home = writeHome(files);
    await runDoctorFix({ home, backup: noBackup });
    await runDoctorFix({ home, backup: noBackup });
    expectAll(home);
  });

  it("takes them from the files when a kept source is imported again after a crash", async () => {
    const home = writeHome(files);
    await runDoctorFix({ home, backup: noBackup, keepSources: true });
    // A rerun with every source still present (as after a crash before the removals).
    const state = openStateHome({ home, create: false });
    state.db.exec("DELETE FROM migration_sources");
    state.close();
    await runDoctorFix({ home, backup: noBackup });
    expectAll(home);
  });
});

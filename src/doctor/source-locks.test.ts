import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";
import { planMigration } from "./plan.js";
import { headerLine, messageLine } from "./test-support/legacy-lines.js";

const tempDir = useTempDirs();
const noBackup = async () => "(test)";
const SESSIONS = "agents/main/sessions";
const SESSION = "6f1e2d3c-lock";

function lockedHome(): string {
  const dir = join(tempDir(), "home");
  const files = {
    [`${SESSIONS}/sessions.json`]: JSON.stringify({
      "agent:main:main": { sessionId: SESSION, updatedAt: 1_767_600_000_000 },
    }),
    [`${SESSIONS}/sessions.json.lock`]: `${process.pid}\n`,
    [`${SESSIONS}/${SESSION}.jsonl`]: `${headerLine(SESSION)}\n${messageLine("m1", null, "hi")}\n`,
    [`${SESSIONS}/${SESSION}.jsonl.lock`]: `${process.pid}\n`,
  };
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  return dir;
}

describe("doctor --fix and writer locks", () => {
  it("plans both locks as removed after import, and a clean run removes them with their sources", async () => {
    const home = lockedHome();
    const locks = planMigration(home).sources.filter((s) => s.kind === "lock");
    expect(locks.map((s) => s.path).sort()).toEqual([
      `${SESSIONS}/${SESSION}.jsonl.lock`,
      `${SESSIONS}/sessions.json.lock`,
    ]);
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.status).toBe("succeeded");
    expect(existsSync(join(home, SESSIONS, "sessions.json"))).toBe(false);
    expect(existsSync(join(home, SESSIONS, "sessions.json.lock"))).toBe(false);
    expect(existsSync(join(home, SESSIONS, `${SESSION}.jsonl.lock`))).toBe(false);
  });

  it("keeps every lock beside its kept source with --keep-sources", async () => {
    const home = lockedHome();
    await runDoctorFix({ home, backup: noBackup, keepSources: true });
    expect(existsSync(join(home, SESSIONS, "sessions.json"))).toBe(true);
    expect(existsSync(join(home, SESSIONS, "sessions.json.lock"))).toBe(true);
    expect(existsSync(join(home, SESSIONS, `${SESSION}.jsonl.lock`))).toBe(true);
  });
});

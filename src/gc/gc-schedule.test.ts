import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { ageSession, DAY, startSession } from "../maintenance/test-support/seed-home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { scheduleGc } from "./gc-schedule.js";

const tempDir = useTempDirs();

async function until(what: string, test: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function coldSessions(home: ReturnType<typeof openStateHome>): string[] {
  return home
    .agent("main")
    .db.prepare<{ session_id: string }>(
      "SELECT session_id FROM cold_sessions JOIN sessions USING (session_no) ORDER BY 1",
    )
    .all()
    .map((row) => row.session_id);
}

describe("scheduleGc", () => {
  it("applies the home's policy, read afresh each run, and records each agent's quick_check", async () => {
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    const agent = home.agent("main");
    startSession(agent, "agent:main:a", "idle", 5);
    startSession(agent, "agent:main:b", "busy", 5);
    ageSession(agent, "idle", Date.now() - 10 * DAY);
    // A broken file first: the run fails, says why, and the schedule goes on.
    writeFileSync(join(dir, "agentstate.json"), '{"maintenance": {"coldAfterDays": "seven"}}');
    const errors: string[] = [];
    const schedule = scheduleGc(home, {
      everyMs: 1000,
      firstInMs: 0,
      onError: (error) => errors.push((error as Error).message),
    });
    try {
      await until("the failed run", () => errors.length > 0);
      expect(errors[0]).toContain("maintenance.coldAfterDays");
      expect(schedule.runs).toBe(0);
      expect(coldSessions(home)).toEqual([]);

      writeFileSync(join(dir, "agentstate.json"), '{"maintenance": {"coldAfterDays": 7}}');
      await until("a run", () => schedule.runs > 0);
      expect(coldSessions(home)).toEqual(["idle"]);
      const check = home.db
        .prepare<{ quick_check: string | null }>(
          "SELECT quick_check FROM agent_databases WHERE agent_id = 'main'",
        )
        .get();
      expect(check?.quick_check).toBe("ok");
    } finally {
      schedule.stop();
    }
    const runs = schedule.runs;
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(schedule.runs).toBe(runs);
    home.close();
  });

  it("refuses an interval under a second and unknown options", () => {
    const home = openStateHome({ home: tempDir() });
    expect(() => scheduleGc(home, { everyMs: 10 })).toThrow(/at least 1000/);
    expect(() => scheduleGc(home, { everyMs: 1000, every: 5 } as never)).toThrow(/every/);
    home.close();
  });
});

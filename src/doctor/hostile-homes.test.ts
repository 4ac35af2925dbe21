import { execFileSync } from "node:child_process";
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { type DoctorReport, runDoctorFix } from "./fix.js";
import { type MigrationPlan, planMigration } from "./plan.js";
import { headerLine as header, messageLine as line } from "./test-support/legacy-lines.js";

// Legacy homes built to mislead the plan or the import: each must end as a named refusal or a
// named warning in the plan and in the report, never in silence and never as a raw error.

const tempDir = useTempDirs();
const noBackup = async () => "(test)";

function makeHome(files: Record<string, string | Buffer>): string {
  const dir = join(tempDir(), "home");
  mkdirSync(dir, { recursive: true });
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  return dir;
}

function transcript(sessionId: string, headerId = sessionId): string {
  return `${header(headerId)}\n${line(`${sessionId}-1`, null, "hello")}\n`;
}

function planned(plan: MigrationPlan, path: string) {
  const found = plan.sources.find((s) => s.path === path);
  if (!found) throw new Error(`no source ${path} in the plan: ${plan.sources.map((s) => s.path)}`);
  return found;
}

function reported(report: DoctorReport, path: string) {
  const found = report.sources.find((s) => s.path === path);
  if (!found) throw new Error(`no source ${path} in the report`);
  return found;
}

function sessionIds(dir: string, agentId: string): string[] {
  const home = openStateHome({ home: dir, create: false });
  try {
    const db = home.agent(agentId, { create: false }).db;
    return db
      .prepare<{ session_id: string }>("SELECT session_id FROM sessions ORDER BY 1")
      .all()
      .map((row) => row.session_id);
  } finally {
    home.close();
  }
}

describe("symlinked folders", () => {
  it("an agent folder or sessions/ folder that is a link is refused, not skipped", async () => {
    const outside = makeHome({ "agents/real/sessions/s1.jsonl": transcript("s1") });
    const dir = join(tempDir(), "hostile");
    mkdirSync(join(dir, "agents", "other"), { recursive: true });
    symlinkSync(join(outside, "agents", "real"), join(dir, "agents", "linked"));
    symlinkSync(
      join(outside, "agents", "real", "sessions"),
      join(dir, "agents", "other", "sessions"),
    );
    const plan = planMigration(dir);
    for (const path of ["agents/linked", "agents/other/sessions"]) {
      expect(planned(plan, path)).toMatchObject({
        action: "refuse",
        reason: expect.stringMatching(/symbolic link/),
      });
    }
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    expect(reported(report, "agents/linked").status).toBe("refused");
    expect(reported(report, "agents/other/sessions").status).toBe("refused");
  });
});

describe("agent folders and file names that are not valid ids", () => {
  it("are refused in the plan, naming the folder and why, exactly as the import would", async () => {
    const bad = ["Ag ent!", ".hidden", "-flag", "é"];
    const dir = makeHome({
      ...Object.fromEntries(bad.map((id) => [`agents/${id}/sessions/s1.jsonl`, transcript("s1")])),
      "agents/fine/sessions/s1.jsonl": transcript("s1"),
    });
    const plan = planMigration(dir);
    for (const id of bad) {
      const source = planned(plan, `agents/${id}/sessions/s1.jsonl`);
      expect(source.action, id).toBe("refuse");
      expect(source.reason, id).toContain(JSON.stringify(id));
      expect(source.reason, id).toMatch(/not a valid agent id/);
    }
    expect(planned(plan, "agents/fine/sessions/s1.jsonl").action).toBe("import");
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    for (const id of bad)
      expect(reported(report, `agents/${id}/sessions/s1.jsonl`).status).toBe("refused");
    expect(report.sources.filter((s) => s.status === "failed")).toEqual([]);
    expect(reported(report, "agents/fine/sessions/s1.jsonl").status).toBe("imported");
  });

  it("transcripts named ..jsonl or ...jsonl (session ids . and ..) are refused", async () => {
    const dir = makeHome({
      "agents/main/sessions/..jsonl": transcript("."),
      "agents/main/sessions/...jsonl": transcript(".."),
    });
    const plan = planMigration(dir);
    for (const path of ["agents/main/sessions/..jsonl", "agents/main/sessions/...jsonl"])
      expect(planned(plan, path)).toMatchObject({
        action: "refuse",
        reason: expect.stringMatching(/session id/),
      });
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    expect(reported(report, "agents/main/sessions/..jsonl").status).toBe("refused");
  });
});

describe("what the import used to decide in silence", () => {
  it("a key given twice in sessions.json is a warning naming the key", async () => {
    const dir = makeHome({
      "agents/main/sessions/sessions.json": `{"agent:main:main":{"sessionId":"a","updatedAt":1},"agent:main:main":{"sessionId":"b","updatedAt":2}}`,
    });
    const plan = planMigration(dir);
    const index = planned(plan, "agents/main/sessions/sessions.json");
    expect(index.problems).toEqual([
      expect.objectContaining({
        key: "agent:main:main",
        reason: expect.stringMatching(/twice|2 times/),
      }),
    ]);
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    const fixed = reported(report, "agents/main/sessions/sessions.json");
    expect(fixed.status).toBe("warning");
    expect(fixed.problems[0]).toMatchObject({ key: "agent:main:main" });
  });

  it("a header id that differs from the file name is a warning saying which id is used; the file still completes", async () => {
    const dir = makeHome({
      "agents/main/sessions/file-id.jsonl": transcript("file-id", "header-id"),
    });
    const plan = planMigration(dir);
    const source = planned(plan, "agents/main/sessions/file-id.jsonl");
    const said = [...source.notes, ...source.problems.map((p) => p.reason)].join("\n");
    expect(said).toMatch(/header-id/);
    expect(said).toMatch(/imported as "file-id"|uses "file-id"/);
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    const fixed = reported(report, "agents/main/sessions/file-id.jsonl");
    expect(fixed.notes.join("\n")).toMatch(/warning: .*header-id.*imported as "file-id"/);
    // Real gateways write such archives (a reset archive names its successor): nothing is lost.
    expect(fixed).toMatchObject({ status: "imported", removed: true, problems: [] });
    expect(sessionIds(dir, "main")).toEqual(["file-id"]);
  });

  it("an index nested 100,000 deep is a named refusal, not a RangeError", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const dir = makeHome({
      "agents/main/sessions/sessions.json": `{"agent:main:main":${deep}}`,
      "cron/jobs.json": deep,
    });
    const plan = planMigration(dir);
    for (const path of ["agents/main/sessions/sessions.json", "cron/jobs.json"]) {
      const source = planned(plan, path);
      expect(source.action, path).toBe("refuse");
      expect(source.reason, path).toMatch(/E_CORRUPT_SOURCE/);
      expect(source.reason, path).toContain(path);
      expect(source.reason, path).not.toMatch(/RangeError|call stack/);
    }
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    expect(reported(report, "cron/jobs.json").status).toBe("refused");
  });
});

describe("a file swapped for a link after the plan", () => {
  it("is refused at import (O_NOFOLLOW), and what the link points at is not imported", async () => {
    const outside = makeHome({ "secret.jsonl": transcript("swapped") });
    const dir = makeHome({
      "agents/main/sessions/aaa.jsonl": transcript("aaa"),
      "agents/main/sessions/swapped.jsonl": transcript("swapped"),
    });
    const victim = join(dir, "agents/main/sessions/swapped.jsonl");
    let swapped = false;
    const report = await runDoctorFix({
      home: dir,
      backup: noBackup,
      onProgress: () => {
        if (swapped) return;
        swapped = true;
        renameSync(victim, `${victim}.gone`);
        symlinkSync(join(outside, "secret.jsonl"), victim);
      },
    });
    const source = reported(report, "agents/main/sessions/swapped.jsonl");
    expect(source.status).toBe("failed");
    expect(source.error).toMatch(/symbolic link/);
    expect(sessionIds(dir, "main")).toEqual(["aaa"]);
    // The link is still there (nothing removed through it) and its target untouched.
    expect(execFileSync("readlink", [victim], { encoding: "utf8" }).trim()).toBe(
      join(outside, "secret.jsonl"),
    );
  });
});

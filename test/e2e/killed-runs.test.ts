import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

/** How many random kills of each command; `npm run test:trials` runs 20. */
const TRIALS = Number(process.env.AGENTSTATE_KILL_TRIALS ?? 5);
const tempDir = useTempDirs();
beforeAll(requireBuild);

function start(args: readonly string[]): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    stdio: "ignore",
    env: { ...process.env, AGENTSTATE_HOME: "" },
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.on("exit", () => resolve());
  });
}

async function killAfter(args: readonly string[], ms: number): Promise<void> {
  const child = start(args);
  const timer = setTimeout(() => child.kill("SIGKILL"), ms);
  await exited(child);
  clearTimeout(timer);
}

/** Kills the command the moment `ready()` holds (polled), or lets it finish. */
async function killWhen(args: readonly string[], ready: () => boolean): Promise<boolean> {
  const child = start(args);
  const done = exited(child);
  let running = true;
  void done.then(() => {
    running = false;
  });
  while (running) {
    if (ready()) {
      child.kill("SIGKILL");
      await done;
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return false;
}

/** Run statuses straight from the file, by a reader that is not the code under test. */
function runningRows(home: string): { migrations: number; backups: number } {
  const path = join(home, "state", "state.sqlite");
  if (!existsSync(path)) return { migrations: 0, backups: 0 };
  const db = openRawSqlite(path, { readonly: true });
  try {
    const count = (table: string) =>
      (
        db.prepare(`SELECT count(*) AS n FROM ${table} WHERE status = 'running'`).get() as {
          n: number;
        }
      ).n;
    return { migrations: count("migration_runs"), backups: count("backup_runs") };
  } finally {
    db.close();
  }
}

/** What a killed backup leaves in `backups/`: a partial archive or a snapshot folder. */
function debris(home: string): string[] {
  const dir = join(home, "backups");
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter(
    (name) => name.includes(".tmp-") || name.startsWith(".agentstate-backup-"),
  );
}

function rows(home: string): Record<string, unknown> {
  const state = openStateHome({ home, create: false });
  try {
    const out: Record<string, unknown> = {};
    for (const { agentId } of state.listAgents()) {
      const db = state.agent(agentId, { create: false }).db;
      out[agentId] = {
        events: db
          .prepare(
            "SELECT session_id, seq, event_json FROM agentstate_events_v1 ORDER BY session_id, seq",
          )
          .all(),
        entries: db.prepare("SELECT session_key, entry_json FROM session_entries ORDER BY 1").all(),
        sessions: db
          .prepare("SELECT session_id, session_key, ended_at FROM sessions ORDER BY session_id")
          .all(),
      };
    }
    return out;
  } finally {
    state.close();
  }
}

function legacyHome(): string {
  const home = tempDir();
  generateLegacyHome(home, {
    agents: 2,
    sessions: 20,
    events: 100,
    bigTranscriptMb: 3,
    deleted: 2,
  });
  return home;
}

function hasWorkFolder(home: string): boolean {
  const dir = join(home, "backups");
  return existsSync(dir) && readdirSync(dir).some((name) => name.startsWith(".agentstate-backup-"));
}

describe("a backup killed with SIGKILL", () => {
  it("is marked interrupted by the next backup list, which removes its leftovers and says so", async () => {
    const home = legacyHome();
    expect(cli(["doctor", "--fix", "--home", home]).status).toBe(0);
    const killed = await killWhen(["backup", "create", "--home", home], () => hasWorkFolder(home));
    expect(killed).toBe(true);
    expect(runningRows(home).backups).toBe(1);
    expect(debris(home).length).toBeGreaterThan(0);

    const listed = cli(["backup", "list", "--home", home]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(
      /found 1 interrupted backup run \(pid \d+, gone\): marked interrupted, removed [12] leftover files?/,
    );
    expect(listed.stdout).toMatch(/interrupted/);
    expect(runningRows(home).backups).toBe(0);
    expect(debris(home)).toEqual([]);
    // Said once: the next list finds nothing more to settle.
    expect(cli(["backup", "list", "--home", home]).stdout).not.toMatch(/found \d+ interrupted/);
  }, 60_000);

  it("is not taken for dead while its process runs", async () => {
    const home = legacyHome();
    expect(cli(["doctor", "--fix", "--home", home]).status).toBe(0);
    const child = start(["backup", "create", "--home", home]);
    while (!hasWorkFolder(home) && child.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 2));
    child.kill("SIGSTOP");
    try {
      const listed = cli(["backup", "list", "--home", home]);
      expect(listed.stdout).not.toMatch(/interrupted/);
      expect(runningRows(home).backups).toBe(1);
    } finally {
      child.kill("SIGCONT");
    }
    await exited(child);
    expect(child.exitCode).toBe(0);
    expect(debris(home)).toEqual([]);
  }, 60_000);
});

describe("doctor --fix killed with SIGKILL", () => {
  it("during its backup: the next doctor --fix marks both runs' leftovers and finishes", async () => {
    const pristine = legacyHome();
    const clean = tempDir();
    cpSync(pristine, clean, { recursive: true });
    expect(cli(["doctor", "--fix", "--home", clean]).status).toBe(0);

    const killed = await killWhen(["doctor", "--fix", "--home", pristine], () =>
      hasWorkFolder(pristine),
    );
    expect(killed).toBe(true);
    expect(runningRows(pristine).backups).toBe(1);
    const fixed = cli(["doctor", "--fix", "--home", pristine]);
    expect(fixed.status).toBe(0);
    expect(fixed.stdout).toMatch(/found 1 interrupted backup run \(pid \d+, gone\)/);
    expect(runningRows(pristine)).toEqual({ migrations: 0, backups: 0 });
    expect(debris(pristine)).toEqual([]);
    expect(rows(pristine)).toEqual(rows(clean));
  }, 60_000);

  it("during its import: doctor --history marks the run interrupted", async () => {
    const home = legacyHome();
    const killed = await killWhen(
      ["doctor", "--fix", "--home", home],
      () => runningRows(home).migrations === 1,
    );
    expect(killed).toBe(true);
    const history = cli(["doctor", "--history", "--home", home]);
    expect(history.status).toBe(0);
    expect(history.stdout).toMatch(
      /found 1 interrupted doctor run \(pid \d+, gone\): marked interrupted/,
    );
    expect(history.stdout).toMatch(/\binterrupted\b/);
    expect(runningRows(home).migrations).toBe(0);
  }, 60_000);
});

describe(`kills at ${TRIALS} random points`, () => {
  let seed = 20_261_126;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };

  it("of doctor --fix: each next command leaves nothing running, no debris, and the rows of a clean import", async () => {
    const pristine = legacyHome();
    const clean = tempDir();
    cpSync(pristine, clean, { recursive: true });
    const began = Date.now();
    expect(cli(["doctor", "--fix", "--home", clean]).status).toBe(0);
    const full = Date.now() - began;
    for (let trial = 0; trial < TRIALS; trial++) {
      await killAfter(["doctor", "--fix", "--home", pristine], 150 + random() * full);
      // Alternate the command that comes next: both must settle what the kill left.
      const next = trial % 2 === 0 ? ["doctor", "--history"] : ["backup", "list"];
      expect(cli([...next, "--home", pristine]).status).toBe(0);
      if (next[0] === "doctor")
        expect(runningRows(pristine)).toEqual({ migrations: 0, backups: 0 });
      else expect(runningRows(pristine).backups).toBe(0);
      expect(debris(pristine)).toEqual([]);
    }
    expect(cli(["doctor", "--fix", "--home", pristine]).status).toBe(0);
    expect(runningRows(pristine)).toEqual({ migrations: 0, backups: 0 });
    expect(debris(pristine)).toEqual([]);
    expect(rows(pristine)).toEqual(rows(clean));
  }, 600_000);

  it("of backup create: each next command leaves nothing running, no debris, every archive whole", async () => {
    const home = legacyHome();
    expect(cli(["doctor", "--fix", "--home", home]).status).toBe(0);
    const before = rows(home);
    const began = Date.now();
    expect(cli(["backup", "create", "--home", home]).status).toBe(0);
    const full = Date.now() - began;
    for (let trial = 0; trial < TRIALS; trial++) {
      await killAfter(["backup", "create", "--home", home], 100 + random() * full);
      const next = trial % 2 === 0 ? ["backup", "list"] : ["backup", "create"];
      expect(cli([...next, "--home", home]).status).toBe(0);
      expect(runningRows(home).backups).toBe(0);
      expect(debris(home)).toEqual([]);
    }
    const listed = JSON.parse(
      cli(["backup", "list", "--json", "--limit", "1000", "--home", home]).stdout,
    ) as {
      archive: string;
      status: string;
      archiveExists: boolean;
    }[];
    for (const run of listed.filter((r) => r.status === "succeeded")) {
      expect(run.archiveExists, run.archive).toBe(true);
      expect(cli(["backup", "verify", run.archive]).status, run.archive).toBe(0);
    }
    expect(new Set(listed.map((r) => r.archive)).size).toBe(listed.length);
    expect(rows(home)).toEqual(before);
  }, 600_000);
});

// Restore over a home that is in use, or was: sidecars of a killed writer, a live writer, and a
// restore killed at random points or crashed after its commit at every step.
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/create-backup.js";
import { makeHome } from "../../src/backup/test-support/archives.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
const DIST = new URL("../../dist/index.js", import.meta.url).href;
/** Full count: `npm run test:trials`. */
const KILL_TRIALS = Number(process.env.AGENTSTATE_RESTORE_KILL_TRIALS ?? 6);

/** A process that opens the home, writes `marker`, says "ready" and holds the home until killed. */
function holdHome(home: string, marker: string): Promise<ChildProcess> {
  const script = `
    import { openStateHome } from ${JSON.stringify(DIST)};
    const home = openStateHome({ home: ${JSON.stringify(home)} });
    home.kv.set("test", "marker", ${JSON.stringify(marker)});
    home.agent("main").kv.set("test", "marker", ${JSON.stringify(marker)});
    // Held by a live reference: an unreachable handle would be collected, closing the database.
    globalThis.heldHome = home;
    process.stdout.write("ready\\n");
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.stdout?.once("data", () => resolve(child));
    child.once("exit", (code) => reject(new Error(`holder exited early (${code})`)));
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

/** Reads one value with the sqlite3 library itself, outside agentstate. */
function readMarker(dbPath: string): unknown {
  const db = openRawSqlite(dbPath, { readonly: true });
  try {
    return db
      .prepare("SELECT value_json FROM kv WHERE scope = 'test' AND key = 'marker'")
      .pluck()
      .get();
  } finally {
    db.close();
  }
}

interface HomeView {
  marker: unknown;
  agents: string[];
  events: Record<string, number>;
  integrity: Array<string | undefined>;
}

/** What a home holds, and whether every database in it passes integrity_check. */
function viewHome(path: string): HomeView {
  const home = openStateHome({ home: path, create: false });
  try {
    const agents = home.listAgents().map((agent) => agent.agentId);
    const events: Record<string, number> = {};
    const check = (db: typeof home.db) =>
      db.prepare<{ integrity_check: string }>("PRAGMA integrity_check").get()?.integrity_check;
    const integrity = [check(home.db)];
    for (const agentId of agents) {
      const db = home.agent(agentId, { create: false }).db;
      events[agentId] = db
        .prepare<{ n: number }>("SELECT count(*) AS n FROM transcript_events")
        .get()?.n as number;
      integrity.push(check(db));
    }
    const marker = home.kv.get("test", "marker") ?? null;
    return { marker, agents, events, integrity };
  } finally {
    home.close();
  }
}

function setMarker(path: string, marker: string): void {
  const home = openStateHome({ home: path });
  home.kv.set("test", "marker", marker);
  home.close();
}

/** An archive of a home marked "restored", and an old home (other sizes) marked "old". */
async function archiveAndOldHome(): Promise<{ archive: string; old: string }> {
  const source = makeHome(tempDir(), 30);
  setMarker(source, "restored");
  const archive = (await createBackup(source, { out: join(tempDir(), "b.tar.gz") })).archive;
  const old = makeHome(tempDir(), 7);
  setMarker(old, "old");
  return { archive, old };
}

describe("backup restore over a home in use", () => {
  it("--force over databases with -wal/-shm left by a killed writer: restored, old rows kept aside", async () => {
    requireBuild();
    const { archive, old } = await archiveAndOldHome();
    await killed(await holdHome(old, "only-in-the-wal"));
    expect(existsSync(join(old, "state", "state.sqlite-wal"))).toBe(true);
    expect(existsSync(join(old, "state", "state.sqlite-shm"))).toBe(true);

    const result = cli(["backup", "restore", archive, "--home", old, "--force", "--json"]);
    expect(result.status, result.stderr).toBe(0);
    const view = viewHome(old);
    expect(view).toMatchObject({ marker: "restored", agents: ["main", "research"] });
    expect(view.integrity).toEqual(["ok", "ok", "ok"]);
    // The old databases moved aside with their sidecars, so what only their WAL held is there.
    const report = JSON.parse(result.stdout) as { movedAside: Array<{ from: string; to: string }> };
    const state = report.movedAside.find((m) => m.from === join(old, "state"))?.to as string;
    const agents = report.movedAside.find((m) => m.from === join(old, "agents"))?.to as string;
    expect(readMarker(join(state, "state.sqlite"))).toBe('"only-in-the-wal"');
    expect(readMarker(join(agents, "main", "agent", "agent.sqlite"))).toBe('"only-in-the-wal"');
    expect(readdirSync(old).sort()).toEqual([
      "agents",
      "backups",
      "config.json",
      "credentials",
      "state",
    ]);
  });

  it("refuses a home another process has open, naming it, even with --force; nothing changes", async () => {
    requireBuild();
    const { archive, old } = await archiveAndOldHome();
    const holder = await holdHome(old, "held");
    try {
      const before = readdirSync(old).sort();
      const result = cli(["backup", "restore", archive, "--home", old, "--force"]);
      expect(result.status, `${result.stdout}${result.stderr}`).toBe(5);
      expect(holder.exitCode).toBe(null);
      expect(result.stderr).toContain(`pid ${holder.pid}`);
      expect(result.stderr).toMatch(/is open in another process.*stop it/);
      expect(readdirSync(old).sort()).toEqual(before);
    } finally {
      await killed(holder);
    }
    expect(viewHome(old).marker).toBe("held");
    const retry = cli(["backup", "restore", archive, "--home", old, "--force"]);
    expect(retry.status, retry.stderr).toBe(0);
    expect(viewHome(old).marker).toBe("restored");
  });

  it("a crash after the commit, at every step of the switch: the next open finishes it", async () => {
    const { archive, old } = await archiveAndOldHome();
    const restoredTree = join(tempDir(), "tree");
    cli(["backup", "restore", archive, "--home", restoredTree]);
    const expected = viewHome(restoredTree);
    const oldNames = readdirSync(old).sort();
    const newNames = readdirSync(restoredTree).sort();
    for (let step = 0; step <= oldNames.length + newNames.length; step++) {
      // The state a crash leaves: the staged tree and the journal, and `step` renames done.
      const home = join(tempDir(), `crashed-${step}`);
      cpSync(old, home, { recursive: true });
      const work = join(home, ".agentstate-restore");
      mkdirSync(work, { mode: 0o700 });
      writeFileSync(join(work, "owner"), "999999999 ?"); // A process that is gone.
      cpSync(restoredTree, join(work, "home"), { recursive: true });
      const aside = "backups/replaced-crash";
      writeFileSync(join(work, "journal.json"), JSON.stringify({ aside, moveAside: oldNames }));
      mkdirSync(join(home, aside), { recursive: true });
      for (const name of oldNames.slice(0, step))
        renameSync(join(home, name), join(home, aside, name));
      for (const name of newNames.slice(0, Math.max(0, step - oldNames.length)))
        renameSync(join(work, "home", name), join(home, name));

      expect(viewHome(home), `crash after ${step} renames`).toEqual(expected);
      expect(existsSync(work)).toBe(false);
      expect(readMarker(join(home, aside, "state", "state.sqlite"))).toBe('"old"');
    }
  });

  it(`kill -9 at ${KILL_TRIALS} random points of a restore: the old or the restored home, whole`, async () => {
    requireBuild();
    const { archive, old } = await archiveAndOldHome();
    const oldView = viewHome(old);
    const timing = join(tempDir(), "timing");
    cpSync(old, timing, { recursive: true });
    const started = Date.now();
    expect(cli(["backup", "restore", archive, "--home", timing, "--force"]).status).toBe(0);
    const fullMs = Date.now() - started;
    const restoredView = viewHome(timing);
    let seed = 4242;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const outcomes = { old: 0, restored: 0 };
    for (let trial = 0; trial < KILL_TRIALS; trial++) {
      const home = join(tempDir(), `trial-${trial}`);
      cpSync(old, home, { recursive: true });
      const child = spawn(
        process.execPath,
        [CLI, "backup", "restore", archive, "--home", home, "--force"],
        {
          stdio: "ignore",
        },
      );
      const timer = setTimeout(() => child.kill("SIGKILL"), Math.floor(random() * fullMs * 1.1));
      await new Promise((resolve) => child.once("exit", resolve));
      clearTimeout(timer);
      const view = viewHome(home);
      expect([oldView, restoredView], `trial ${trial}`).toContainEqual(view);
      outcomes[view.marker === "old" ? "old" : "restored"]++;
      expect(existsSync(join(home, ".agentstate-restore")), `trial ${trial}`).toBe(false);
    }
    expect(outcomes.old + outcomes.restored).toBe(KILL_TRIALS);
  }, 300_000);
});

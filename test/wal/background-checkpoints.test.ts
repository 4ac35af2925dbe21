import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import type { Database, OpenDatabaseOptions } from "../../src/db/database.js";
import { descriptorsOn } from "../../src/test-support/descriptors.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { importBuilt, requireBuild } from "../support/built.js";
import { node24 } from "../support/runtimes.js";

const run = promisify(execFile);
const APPENDER = new URL("../fixtures/wal-appender.mjs", import.meta.url).pathname;
const LIMIT = 64 * 1024 * 1024;
/** The -wal size past which the writer catches up itself (src/db/wal-signal.ts). */
const CATCH_UP_BYTES = 24 * 1024 * 1024;
const tempDir = useTempDirs();

// The built package: only there does the checkpointer thread's compiled entry exist.
let openDatabase: (options: OpenDatabaseOptions) => Database;
let openStateHome: typeof import("../../src/home.js").openStateHome;
beforeAll(async () => {
  requireBuild();
  ({ openDatabase, openStateHome } = await importBuilt<{
    openDatabase: typeof openDatabase;
    openStateHome: typeof openStateHome;
  }>());
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function walBytes(path: string): number {
  return statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
}

function openTable(path: string, options: Partial<OpenDatabaseOptions> = {}) {
  const db = openDatabase({ path, role: "agent", ...options });
  db.exec(
    "CREATE TABLE IF NOT EXISTS appended (id INTEGER PRIMARY KEY, writer INTEGER, body TEXT)",
  );
  const insert = db.prepare("INSERT INTO appended (body) VALUES (?)");
  const body = "x".repeat(200);
  return { db, append: () => db.tx(() => insert.run(body)) };
}

function rowCount(db: Database): number {
  return db.prepare<{ n: number }>("SELECT count(*) AS n FROM appended").get()?.n ?? -1;
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(20);
  }
  return check();
}

describe("background checkpoints", () => {
  it("keeps the WAL under 64 MiB through 50,000 appends in a tight loop", () => {
    const path = join(tempDir(), "tight.sqlite");
    const { db, append } = openTable(path);
    expect(db.checkpoints).toBe("background");
    expect(db.pragma("wal_autocheckpoint")).toBe(0);
    expect(db.pragma("journal_size_limit")).toBe(LIMIT);
    const samples: number[] = [];
    for (let i = 0; i < 50_000; i++) {
      append();
      if (i % 100 === 0) samples.push(walBytes(path));
    }
    expect(Math.max(...samples)).toBeLessThan(LIMIT);
    // It did work: without checkpoints 50,000 commits of a 4 KiB page each pass 190 MiB.
    expect(samples.length).toBe(500);
    expect(rowCount(db)).toBe(50_000);
    expect(db.integrityCheck()).toEqual(["ok"]);
    db.close();
  }, 120_000);

  it("starts the WAL over in its own file under a tight loop instead of truncating it", () => {
    const path = join(tempDir(), "restart.sqlite");
    const { db, append } = openTable(path);
    const sizes = new Set<number>();
    for (let i = 0; i < 40_000; i++) {
      append();
      if (i % 50 === 0) sizes.add(walBytes(path));
    }
    // A WAL that grows frame by frame from nothing is 32 + n × (4096 + 24) bytes: 24 MiB is no
    // such size. Seen while the loop runs, it is the file a catch-up restarted and cut back to
    // CALLER_CATCH_UP_BYTES, the frames written since reusing it from its start.
    const frames = (bytes: number) => (bytes - 32) / (4096 + 24);
    expect(Number.isInteger(frames(CATCH_UP_BYTES))).toBe(false);
    expect(sizes.has(CATCH_UP_BYTES)).toBe(true);
    expect(Math.max(...sizes)).toBeLessThan(LIMIT);
    expect(rowCount(db)).toBe(40_000);
    expect(db.integrityCheck()).toEqual(["ok"]);
    db.close();
  }, 120_000);

  it("brings the WAL back under the bound once a long reader ends", async () => {
    const path = join(tempDir(), "reader.sqlite");
    const { db, append } = openTable(path);
    const reader = openDatabase({ path, role: "agent", readonly: true });
    reader.exec("BEGIN");
    expect(rowCount(reader)).toBe(0);
    for (let i = 0; i < 20_000; i++) append();
    await sleep(100);
    // The reader's snapshot pins every frame: no checkpoint can restart the WAL meanwhile.
    const pinned = walBytes(path);
    expect(pinned).toBeGreaterThan(32 * 1024 * 1024);
    expect(rowCount(reader)).toBe(0);
    reader.exec("COMMIT");
    reader.close();
    const back = await until(() => {
      for (let i = 0; i < 500; i++) append();
      return walBytes(path) < 32 * 1024 * 1024;
    }, 15_000);
    expect(back, `WAL still ${walBytes(path)} bytes`).toBe(true);
    expect(rowCount(db)).toBeGreaterThanOrEqual(20_500);
    expect(db.integrityCheck()).toEqual(["ok"]);
    db.close();
  }, 60_000);

  it("catches up at its next look once a reader that held the WAL near the limit lets go", async () => {
    const path = join(tempDir(), "pinned.sqlite");
    const { db, append } = openTable(path);
    // One page a row, all in one statement; the pause lets the writer look at the file once.
    const pages = db.prepare(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO appended (body) SELECT ? FROM n",
    );
    const body = "y".repeat(3500);
    const write = async (rows: number) => {
      pages.run(rows, body);
      await sleep(50);
      return walBytes(path);
    };
    const reader = openDatabase({ path, role: "agent", readonly: true });
    reader.exec("BEGIN");
    expect(rowCount(reader)).toBe(0);
    const samples: number[] = [];
    // Every catch-up is refused while the reader's snapshot pins every frame, the patient ones
    // past 48 MiB too.
    while (walBytes(path) < 52 * 1024 * 1024) {
      for (let i = 0; i < 100; i++) append();
      samples.push(walBytes(path));
    }
    // Past 4 MiB in one go: the writer's look after it is refused too, however late the last one.
    samples.push(await write(1200));
    expect(samples.at(-1)).toBeGreaterThan(56 * 1024 * 1024);
    reader.exec("COMMIT");
    reader.close();
    // Less than 4 MiB in all: a refusal must not put the next try off until the file grows that much.
    const released: number[] = [];
    for (let i = 0; i < 12; i++) released.push(await write(64));
    expect(Math.min(...released)).toBeLessThanOrEqual(CATCH_UP_BYTES);
    expect(Math.max(...samples, ...released)).toBeLessThan(LIMIT);
    expect(db.integrityCheck()).toEqual(["ok"]);
    db.close();
  }, 60_000);

  it("holds its own connection while writes go on, lets it go when idle, and close leaves no -wal/-shm", async () => {
    const dir = tempDir();
    const path = join(dir, "close.sqlite");
    const { db, append } = openTable(path);
    expect(descriptorsOn(`${path}-wal`)).toBe(1);
    for (let i = 0; i < 200; i++) append();
    // The announce timer fires once the burst ends; the thread then opens its own connection.
    expect(await until(() => descriptorsOn(`${path}-wal`) === 2, 5_000)).toBe(true);
    // Quiet for longer than the idle time: the thread closes its connection.
    expect(await until(() => descriptorsOn(`${path}-wal`) === 1, 8_000)).toBe(true);
    for (let i = 0; i < 200; i++) append();
    expect(await until(() => descriptorsOn(`${path}-wal`) === 2, 5_000)).toBe(true);
    db.close();
    expect(descriptorsOn(`${path}-wal`)).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(["close.sqlite"]);
  }, 30_000);

  it("two processes writing one database: every row lands, the WAL stays bounded, no sidecar is left", async () => {
    const dir = tempDir();
    const path = join(dir, "shared.sqlite");
    // Created first, so neither writer races the other to create the file.
    openTable(path).db.close();
    const startAt = String(Date.now() + 1500);
    const writers = await Promise.all(
      [0, 1].map(() => run(process.execPath, [APPENDER, path, "20000", startAt])),
    );
    const reports = writers.map(({ stdout }) => JSON.parse(stdout));
    for (const report of reports) {
      expect(report.modeAtOpen).toBe("background");
      expect(report.largestWal).toBeLessThan(LIMIT);
    }
    const db = openDatabase({ path, role: "agent", readonly: true });
    const perWriter = db
      .prepare<{ n: number }>("SELECT count(*) AS n FROM appended GROUP BY writer")
      .all()
      .map((row) => row.n);
    expect(perWriter).toEqual([20_000, 20_000]);
    expect(db.integrityCheck()).toEqual(["ok"]);
    db.close();
    expect(readdirSync(dir).sort()).toEqual(["shared.sqlite"]);
  }, 120_000);
});

describe("inline checkpoints", () => {
  it("is SQLite's auto-checkpoint, chosen by option or environment", async () => {
    const path = join(tempDir(), "inline.sqlite");
    const { db } = openTable(path, { checkpoints: "inline" });
    expect(db.checkpoints).toBe("inline");
    expect(db.pragma("wal_autocheckpoint")).toBe(1000);
    expect(db.pragma("journal_size_limit")).toBe(LIMIT);
    db.close();
    const { stdout } = await run(process.execPath, [APPENDER, path, "3000", "0"], {
      env: { ...process.env, AGENTSTATE_CHECKPOINTS: "inline" },
    });
    expect(JSON.parse(stdout)).toMatchObject({ modeAtOpen: "inline", autocheckpoint: 1000 });
  });

  it("applies to every database of a home, by the home's option", () => {
    const home = join(tempDir(), "home");
    const background = openStateHome({ home });
    expect([background.db.checkpoints, background.agent("main").db.checkpoints]).toEqual([
      "background",
      "background",
    ]);
    background.close();
    const inline = openStateHome({ home, checkpoints: "inline" });
    expect([inline.db.checkpoints, inline.agent("main").db.checkpoints]).toEqual([
      "inline",
      "inline",
    ]);
    expect(inline.agent("main").db.pragma("wal_autocheckpoint")).toBe(1000);
    inline.close();
    expect(() => openStateHome({ home, checkpoints: "never" as "inline" })).toThrow(
      expect.objectContaining({ code: "E_INVALID_ARGUMENT" }),
    );
  });

  it("rejects an unknown mode by option and by environment", async () => {
    const path = join(tempDir(), "bad.sqlite");
    expect(() =>
      openDatabase({ path, role: "agent", checkpoints: "sometimes" as "inline" }),
    ).toThrow(expect.objectContaining({ code: "E_INVALID_ARGUMENT" }));
    const failed = await run(process.execPath, [APPENDER, path, "1", "0"], {
      env: { ...process.env, AGENTSTATE_CHECKPOINTS: "sometimes" },
    }).catch((error: { stderr: string }) => error);
    expect("stderr" in failed ? failed.stderr : "").toContain("AGENTSTATE_CHECKPOINTS");
    expect(existsSync(path)).toBe(false);
  });

  it("takes over when the runtime forbids worker threads", async () => {
    const dir = tempDir();
    const path = join(dir, "no-threads.sqlite");
    // Node's permission model without --allow-worker refuses every thread (node:sqlite on Node 24:
    // the permission model also refuses native addons such as better-sqlite3).
    const { stdout } = await run(
      node24(),
      ["--permission", "--allow-fs-read=*", "--allow-fs-write=*", APPENDER, path, "20000", "0"],
      { env: { ...process.env, AGENTSTATE_SQLITE_DRIVER: "node" } },
    );
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({ modeAtOpen: "background", modeAtEnd: "inline" });
    expect(report.autocheckpoint).toBe(1000);
    expect(report.largestWal).toBeLessThan(LIMIT);
    expect(readdirSync(dir).sort()).toEqual(["no-threads.sqlite"]);
  }, 60_000);
});

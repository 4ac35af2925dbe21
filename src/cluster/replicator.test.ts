import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { litestreamBinary } from "./litestream-binary.js";
import { Replicator } from "./replicator.js";

const tempDir = useTempDirs();
const open: Replicator[] = [];
afterEach(async () => {
  for (const replicator of open.splice(0)) await replicator.close();
});

function replicator(dir: string, logLimitBytes?: number): Replicator {
  const made = new Replicator(litestreamBinary(), dir, 1_000, logLimitBytes);
  open.push(made);
  return made;
}

/** A WAL database with one row, made over a connection of the test's own. */
function database(dir: string, name = "db"): string {
  const path = join(dir, `${name}.sqlite`);
  const raw = openRawSqlite(path);
  raw.pragma("journal_mode = WAL");
  raw.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  raw.close();
  return path;
}

/** Whether the process runs: a zombie (exited, not yet reaped) does not. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

function argvOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("Replicator: the host's Litestream process", () => {
  it("reports Litestream's own pid, and close() returns once that process is gone", async () => {
    const dir = tempDir();
    const r = replicator(join(dir, "cluster"));
    await r.set("a", {
      path: database(dir),
      replica: { type: "file", path: join(dir, "replica") },
    });
    const pid = r.pid as number;
    // The supervisor's fork of itself, reported before its exec of Litestream.
    await waitFor(() => argvOf(pid)[1] === "replicate", 5_000);
    expect(argvOf(pid)[0]).toBe(litestreamBinary());
    await r.close();
    expect(r.pid).toBeUndefined();
    expect(running(pid)).toBe(false);
  });

  it("restarts on a log past its bound with a fresh log, the old one kept as litestream.log.1 (0600)", async () => {
    const dir = tempDir();
    const cluster = join(dir, "cluster");
    const r = replicator(cluster, 4_096);
    const log = join(cluster, "litestream.log");
    const big = `${"x".repeat(5_000)}\n`;
    writeFileSync(log, big, { mode: 0o600 });
    writeFileSync(`${log}.1`, "an older rotation\n", { mode: 0o600 });
    await r.set("a", {
      path: database(dir),
      replica: { type: "file", path: join(dir, "replica") },
    });
    expect(readFileSync(`${log}.1`, "utf8")).toBe(big);
    expect(statSync(log).size).toBeLessThan(4_096);
    expect(modeOf(statSync(log))).toBe(0o600);
    expect(modeOf(statSync(`${log}.1`))).toBe(0o600);

    // Under the bound, a restart appends to the same log.
    const before = readFileSync(log, "utf8");
    await r.set("b", {
      path: database(dir, "b"),
      replica: { type: "file", path: join(dir, "replica-b") },
    });
    expect(readFileSync(log, "utf8").startsWith(before)).toBe(true);
    expect(readFileSync(`${log}.1`, "utf8")).toBe(big);
  });
});

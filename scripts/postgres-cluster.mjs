// A throwaway PostgreSQL cluster for tests and benchmarks: initdb in a temp dir, started on
// 127.0.0.1 on a free port (no Unix socket), stopped and removed by `stop()`. PostgreSQL refuses
// to run as root, so under root (CI) every server command runs as the `postgres` OS user, which
// then owns the data directory. Plain JavaScript so that the benchmarks (which run without a
// TypeScript step) and the tests share it.
import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

const DEBIAN_ROOT = "/usr/lib/postgresql";

/** The directory holding `initdb` and `pg_ctl`: PATH first, then Debian's versioned dirs, newest first. */
export function findPostgresBin() {
  const onPath = (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  const debian = existsSync(DEBIAN_ROOT)
    ? readdirSync(DEBIAN_ROOT)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join(DEBIAN_ROOT, v, "bin"))
    : [];
  return [...onPath, ...debian].find(
    (dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")),
  );
}

function isRoot() {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Runs a server command, as `postgres` when this process is root. */
function runAsOwner(bin, args) {
  const [command, argv] = isRoot()
    ? ["runuser", ["-u", "postgres", "--", bin, ...args]]
    : [bin, args];
  const result = spawnSync(command, argv, { encoding: "utf8", cwd: tmpdir() });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.trim();
    throw new Error(`${[bin, ...args].join(" ")} failed (${result.status}): ${output}`);
  }
}

function ownerIds() {
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  return { uid, gid };
}

/**
 * Starts a cluster; resolves to `{ url, dir, stop }`. `durable: false` (the default) turns fsync off,
 * which is fine for data thrown away; benchmarks pass `durable: true` to measure real commits.
 */
export async function startCluster({ durable = false } = {}) {
  const bin = findPostgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed: run `node scripts/ensure-postgres.mjs`");
  const dir = mkdtempSync(join(tmpdir(), "agentstate-pg-"));
  const data = join(dir, "data");
  let started = false;
  const stop = () => {
    if (started) {
      started = false;
      try {
        runAsOwner(join(bin, "pg_ctl"), ["stop", "-D", data, "-m", "immediate", "-w"]);
      } catch {
        // Already gone (killed with the test run): the directory still goes.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (isRoot()) {
      const { uid, gid } = ownerIds();
      chownSync(dir, uid, gid);
    }
    runAsOwner(join(bin, "initdb"), [
      "-D",
      data,
      "-U",
      "postgres",
      "--auth=trust",
      "-E",
      "UTF8",
      "--no-locale",
      "--no-sync",
    ]);
    const port = await freePort();
    const options = [
      "-c listen_addresses=127.0.0.1",
      `-c port=${port}`,
      "-c unix_socket_directories=''",
      `-c fsync=${durable ? "on" : "off"}`,
      "-c max_connections=50",
    ].join(" ");
    runAsOwner(join(bin, "pg_ctl"), [
      "start",
      "-D",
      data,
      "-l",
      join(dir, "server.log"),
      "-w",
      "-o",
      options,
    ]);
    started = true;
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, dir, stop };
  } catch (error) {
    stop();
    throw error;
  }
}

// Runs vitest (its arguments passed on) on one runtime:
//   host  the machine's own Node (Node 20 on CI), better-sqlite3 forced;
//   24    the Node 24 binary pinned as a devDependency (package `node`), node:sqlite forced.
// npm links the pinned binary as node_modules/.bin/node, ahead of the host's on every script's
// PATH, and an npm started from a script runs on it (so its npm_node_execpath is Node 24 too):
// the host binary is the first `node` that is not the pinned one, from npm_node_execpath or PATH.
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";

const [runtime, ...args] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const vitest = join(dirname(require.resolve("vitest/package.json")), "vitest.mjs");
const env = { ...process.env };
const pinned = join(dirname(require.resolve("node/package.json")), "bin", "node");

function hostNode() {
  const candidates = [
    process.env.npm_node_execpath,
    ...(process.env.PATH ?? "").split(delimiter).map((dir) => join(dir, "node")),
    process.execPath,
  ];
  for (const candidate of candidates) {
    if (!candidate || !existsSync(candidate)) continue;
    if (realpathSync(candidate) !== realpathSync(pinned)) return candidate;
  }
  console.error("vitest-on: no Node on this machine other than the pinned Node 24");
  process.exit(1);
}

let binary;
if (runtime === "host") {
  binary = hostNode();
  env.AGENTSTATE_SQLITE_DRIVER = "better-sqlite3";
} else if (runtime === "24") {
  binary = pinned;
  env.AGENTSTATE_SQLITE_DRIVER = "node";
} else {
  console.error("usage: node scripts/vitest-on.mjs host|24 [vitest args]");
  process.exit(2);
}
const result = spawnSync(binary, [vitest, "run", ...args], { stdio: "inherit", env });
if (result.error) throw result.error;
process.exit(result.status ?? 1);

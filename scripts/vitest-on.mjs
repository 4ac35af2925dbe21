// Runs vitest (its arguments passed on) on one runtime:
//   host  the Node running npm (Node 20 on CI), engine chosen automatically (better-sqlite3 there);
//   24    the Node 24 binary pinned as a devDependency (package `node`), node:sqlite forced.
// npm links that binary as node_modules/.bin/node, ahead of the host's on every script's PATH,
// so neither runtime is left to `node` on the PATH.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const [runtime, ...args] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const vitest = join(dirname(require.resolve("vitest/package.json")), "vitest.mjs");
const env = { ...process.env };
let binary;
if (runtime === "host") {
  binary = process.env.npm_node_execpath || process.execPath;
} else if (runtime === "24") {
  binary = join(dirname(require.resolve("node/package.json")), "bin", "node");
  env.AGENTSTATE_SQLITE_DRIVER = "node";
} else {
  console.error("usage: node scripts/vitest-on.mjs host|24 [vitest args]");
  process.exit(2);
}
const result = spawnSync(binary, [vitest, "run", ...args], { stdio: "inherit", env });
if (result.error) throw result.error;
process.exit(result.status ?? 1);

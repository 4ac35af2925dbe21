#!/usr/bin/env node
// Before the tests: the read-contract tests open agent databases with Debian's stock sqlite3 shell
// (3.40 on Debian 12), the tool operators reach for, to prove the files stay readable by it.
// Where it is missing, install it when this user may (root with apt-get); otherwise stop with the
// command that installs it: those tests fail rather than skip without it.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const SHELL = "/usr/bin/sqlite3";

function run(command, args) {
  const result = spawnSync(command, args, {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return result.status === 0;
}

if (existsSync(SHELL)) process.exit(0);
const aptGet = ["/usr/bin/apt-get", "/bin/apt-get"].find((path) => existsSync(path));
const root = typeof process.getuid === "function" && process.getuid() === 0;
if (aptGet && root) {
  console.error(`${SHELL} is missing; installing Debian's sqlite3 for the read-contract tests…`);
  if (
    run(aptGet, ["update", "-qq"]) &&
    run(aptGet, ["install", "-y", "-qq", "--no-install-recommends", "sqlite3"]) &&
    existsSync(SHELL)
  ) {
    process.exit(0);
  }
  console.error("installing sqlite3 failed (see above); the read-contract tests need it");
  process.exit(1);
}
const how = aptGet
  ? "sudo apt-get install -y --no-install-recommends sqlite3"
  : "install the sqlite3 shell so that /usr/bin/sqlite3 exists (Debian/Ubuntu: apt-get install sqlite3)";
console.error(`the read-contract tests need ${SHELL}: run \`${how}\`, then npm test again`);
process.exit(1);

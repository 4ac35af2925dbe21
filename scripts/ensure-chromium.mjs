#!/usr/bin/env node
// Before the tests: the dashboard's browser tests drive Debian's chromium (playwright-core brings
// no browser). Where it is missing, install it when this user may (root with apt-get); otherwise
// stop with the one command that installs it, before minutes of other tests run for nothing.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const CHROMIUM = "/usr/bin/chromium";

function run(command, args) {
  const result = spawnSync(command, args, {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return result.status === 0;
}

if (existsSync(CHROMIUM)) process.exit(0);
const aptGet = ["/usr/bin/apt-get", "/bin/apt-get"].find((path) => existsSync(path));
const root = typeof process.getuid === "function" && process.getuid() === 0;
if (aptGet && root) {
  console.error(`${CHROMIUM} is missing; installing Debian's chromium for the browser tests…`);
  if (
    run(aptGet, ["update", "-qq"]) &&
    // --reinstall: a package dpkg lists as installed whose binary is gone is put back too (a plain
    // install would see nothing to do).
    run(aptGet, ["install", "-y", "-qq", "--reinstall", "--no-install-recommends", "chromium"]) &&
    existsSync(CHROMIUM)
  ) {
    process.exit(0);
  }
  console.error("installing chromium failed (see above); the browser tests need it");
  process.exit(1);
}
const how = aptGet
  ? "sudo apt-get install -y --no-install-recommends chromium"
  : "install Chromium so that /usr/bin/chromium exists (Debian/Ubuntu: apt-get install chromium)";
console.error(
  `the dashboard's browser tests need ${CHROMIUM}: run \`${how}\`, then npm test again`,
);
process.exit(1);

#!/usr/bin/env node
// Before the tests: the control-plane tests start a throwaway PostgreSQL (initdb + pg_ctl, see
// scripts/postgres-cluster.mjs). Where the server is missing, install Debian's postgresql when this
// user may (root with apt-get); otherwise stop with the one command that installs it, before
// minutes of other tests run for nothing.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { findPostgresBin } from "./postgres-cluster.mjs";

function run(command, args) {
  const result = spawnSync(command, args, {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return result.status === 0;
}

if (findPostgresBin()) process.exit(0);
const aptGet = ["/usr/bin/apt-get", "/bin/apt-get"].find((path) => existsSync(path));
const root = typeof process.getuid === "function" && process.getuid() === 0;
if (aptGet && root) {
  console.error(
    "initdb/pg_ctl are missing; installing Debian's postgresql for the control-plane tests…",
  );
  if (
    run(aptGet, ["update", "-qq"]) &&
    run(aptGet, ["install", "-y", "-qq", "--no-install-recommends", "postgresql"]) &&
    findPostgresBin()
  ) {
    process.exit(0);
  }
  console.error("installing postgresql failed (see above); the control-plane tests need it");
  process.exit(1);
}
const how = aptGet
  ? "sudo apt-get install -y --no-install-recommends postgresql"
  : "install PostgreSQL so that initdb and pg_ctl are on PATH (Debian/Ubuntu: apt-get install postgresql)";
console.error(
  `the control-plane tests need PostgreSQL's initdb and pg_ctl: run \`${how}\`, then npm test again`,
);
process.exit(1);

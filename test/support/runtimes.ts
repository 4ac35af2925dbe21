import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import { PROJECT_ROOT } from "./built.js";

/** The Node 24 binary pinned as a devDependency (the `node` package). */
export function node24(): string {
  const pkg = createRequire(join(PROJECT_ROOT, "package.json")).resolve("node/package.json");
  return join(dirname(pkg), "bin", "node");
}

/**
 * The host's Node (20 on this project's machines), whichever runtime runs the tests: the one that
 * started npm, else the first `node` on the PATH outside node_modules/.bin (where npm links the
 * pinned Node 24).
 */
export function hostNode(): string {
  const fromNpm = process.env.npm_node_execpath;
  if (fromNpm && existsSync(fromNpm) && fromNpm !== node24()) return fromNpm;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir.includes("node_modules")) continue;
    const candidate = join(dir, "node");
    if (existsSync(candidate)) return candidate;
  }
  throw new Error("no host node on the PATH");
}

export function majorOf(binary: string): number {
  return Number(execFileSync(binary, ["-p", "process.versions.node"]).toString().split(".")[0]);
}

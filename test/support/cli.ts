import { spawnSync } from "node:child_process";
import { CLI } from "./built.js";

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `agentstate` binary in a child process, as a user's shell would. */
export function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    encoding: "utf8",
    env: { ...process.env, AGENTSTATE_HOME: "", ...env },
    timeout: 60_000,
  });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

import { spawn } from "node:child_process";
import { isAbsolute } from "node:path";
import { StateError } from "../db/errors.js";

export interface CommandResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export interface CommandOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  timeoutMs: number;
}

/** Output kept per stream; a chatty command cannot fill the worker's memory. */
const MAX_OUTPUT_BYTES = 1024 * 1024;

export function checkCommand(command: unknown): string[] {
  if (
    !Array.isArray(command) ||
    command.length === 0 ||
    !command.every((part) => typeof part === "string" && !part.includes("\0"))
  ) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      "exec: command must be a non-empty array of strings (argv, no shell)",
    );
  }
  return command as string[];
}

// A token that starts like a host path (`/etc`, `~/x`), also inside a shell line or after `=`.
const HOST_PATH = /(^|[\s'"`=,;(){}[\]|&<>])[/~]/;
// A `..` segment anywhere.
const PARENT_SEGMENT = /(^|[\s'"`=,;(){}[\]|&<>/])\.\.([\s'"`/]|$)/;

/**
 * vfs-only exec: no argument may name a host path or climb out with `..`, also not inside a
 * shell line or a script (`sh -c "cat /etc/hostname"`). This is a guard against a model naming
 * host files, not a sandbox: a program can still build a path and open it, which is why exec in
 * a vfs-only run must be granted explicitly.
 */
export function confineArguments(command: readonly string[]): void {
  command.forEach((arg, index) => {
    // argv[0] may name a program by absolute path (/usr/bin/wc).
    if (index === 0 && isAbsolute(arg) && !PARENT_SEGMENT.test(arg)) return;
    if (HOST_PATH.test(arg) || PARENT_SEGMENT.test(arg)) {
      throw new StateError(
        "E_PATH",
        `exec: argument ${JSON.stringify(arg)} names a path outside the VFS; use paths relative to the working directory`,
        { details: { argument: arg } },
      );
    }
  });
}

/** Runs argv without a shell; resolves with the exit status, never rejects on a non-zero exit. */
export function runCommand(
  command: readonly string[],
  options: CommandOptions,
): Promise<CommandResult> {
  return new Promise((resolvePromise, reject) => {
    const [program, ...args] = command as [string, ...string[]];
    const child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env,
      signal: options.signal,
      timeout: options.timeoutMs,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = { stdout: "", stderr: "" };
    const collect = (name: "stdout" | "stderr") => (chunk: Buffer) => {
      if (out[name].length < MAX_OUTPUT_BYTES) out[name] += chunk.toString("utf8");
    };
    child.stdout.on("data", collect("stdout"));
    child.stderr.on("data", collect("stderr"));
    child.once("error", reject);
    child.once("close", (exitCode, signal) => {
      if (options.signal.aborted) reject(options.signal.reason);
      else resolvePromise({ exitCode, signal, ...out });
    });
  });
}

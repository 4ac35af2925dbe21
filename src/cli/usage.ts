import { type Command, CommanderError } from "commander";
import { StateError } from "../db/errors.js";
import { reportError } from "./errors.js";

/**
 * Makes commander throw its usage errors instead of exiting with 1, so the CLI exits 2 for all of
 * them. With `--json` commander prints nothing: the caller prints the error as JSON, as for any
 * other error. Set on the program before its subcommands are added: they copy it when created.
 */
export function configureUsageErrors(program: Command, json: boolean): Command {
  program.exitOverride();
  if (json) program.configureOutput({ writeErr: () => undefined, outputError: () => undefined });
  return program;
}

export function isUsageExit(error: unknown): error is CommanderError {
  return error instanceof CommanderError;
}

/** The exit status of a commander exit: 0 for help and version, else 2 (printed as JSON if asked). */
export function reportUsageExit(error: CommanderError, json: boolean): number {
  // `--help`, `help` and `--version` end the parse through the same path, with status 0.
  if (error.exitCode === 0) return 0;
  if (json) {
    // A group run without its subcommand prints its help to stderr; commander has no message.
    const message =
      error.code === "commander.help"
        ? "a subcommand is required: --help lists them"
        : error.message.replace(/^error: /, "");
    return reportError(
      new StateError("E_INVALID_ARGUMENT", message, { details: { usage: error.code } }),
      true,
    );
  }
  return 2;
}

import type { Command } from "commander";
import { StateError } from "../db/errors.js";
import { openStateHome, type StateHome } from "../home.js";

export interface HomeOptions {
  home?: string;
}

export interface JsonOption {
  json?: boolean;
}

export function addHomeOption(command: Command): Command {
  return command.option(
    "--home <dir>",
    "agentstate home (default: $AGENTSTATE_HOME, else ~/.agentstate)",
  );
}

export function addJsonOption(command: Command): Command {
  return command.option("--json", "print machine-readable JSON");
}

/** Opens the home for a command and closes it afterwards, also when the command throws. */
export function withHome<T>(options: HomeOptions, create: boolean, fn: (home: StateHome) => T): T {
  const home = openStateHome({ home: options.home, create });
  try {
    return fn(home);
  } finally {
    home.close();
  }
}

/** An integer flag value in [min, max], or `E_INVALID_ARGUMENT` naming the flag. */
export function parseInteger(flag: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${flag} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

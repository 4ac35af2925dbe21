import { existsSync } from "node:fs";
import { dirname } from "node:path";
import type { Command } from "commander";
import { StateError } from "../db/errors.js";
import type { UpgradeProgress } from "../db/layout-upgrade.js";
import { type AgentState, openStateHome, resolveHomePath, type StateHome } from "../home.js";

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

/** `--agent` for a command that reads one agent; `agentOf` says which when it is left out. */
export function addAgentOption(command: Command, description: string): Command {
  return command.option(
    "--agent <id>",
    `${description} (default: the home's only agent, else main)`,
  );
}

function agentList(ids: readonly string[]): string {
  return ids.length === 0 ? "this home has no agents" : `this home has agents ${ids.join(", ")}`;
}

/**
 * The agent a command reads: the one given, else the home's only agent, else `main` when the home
 * has several and one is main. Either mistake names the agents there are, so the next try works.
 */
export function agentOf(home: StateHome, given: string | undefined): AgentState {
  const ids = home.listAgents().map((agent) => agent.agentId);
  if (given !== undefined) {
    if (!ids.includes(given)) {
      throw new StateError(
        "E_NOT_FOUND",
        `no agent "${given}" in home ${home.path}; ${agentList(ids)}`,
        {
          details: { agentId: given, home: home.path, agents: ids },
        },
      );
    }
    return home.agent(given, { create: false });
  }
  const only = ids.length === 1 ? ids[0] : undefined;
  const chosen = only ?? (ids.includes("main") ? "main" : undefined);
  if (chosen === undefined) {
    throw new StateError("E_INVALID_ARGUMENT", `--agent is required: ${agentList(ids)}`, {
      details: { home: home.path, agents: ids },
    });
  }
  return home.agent(chosen, { create: false });
}

/** Appends an `Examples:` section (and an optional note) to a command's `--help`. */
export function addExamples(command: Command, examples: readonly string[], note?: string): Command {
  const lines = ["", "Examples:", ...examples.map((example) => `  ${example}`)];
  if (note !== undefined) lines.push("", note);
  return command.addHelpText("after", lines.join("\n"));
}

/**
 * A command may create a new home, but only inside a directory that exists: a mistyped nested
 * `--home` must not silently grow a tree of directories holding an empty home.
 */
function refuseNestedCreation(path: string): void {
  const parent = dirname(path);
  if (existsSync(path) || existsSync(parent)) return;
  throw new StateError(
    "E_NOT_FOUND",
    `no agentstate home at ${path}, and its directory ${parent} does not exist either; check --home, or create ${parent} first`,
    { details: { home: path } },
  );
}

/** Homes a command has open: closed on the way out too, when something calls process.exit. */
const openHomes = new Set<StateHome>();

/**
 * A database closed by its last connection checkpoints its WAL and removes the -wal and -shm
 * files; one left open by a process that exits keeps them. An exit handler runs synchronously,
 * as closing a database does.
 */
process.on("exit", () => {
  for (const home of openHomes) {
    try {
      home.close();
    } catch {
      // Exiting anyway: an unclosed database loses nothing committed, it only keeps its WAL.
    }
  }
  openHomes.clear();
});

/**
 * The one-time upgrade of a database an older release wrote runs when a command first opens it;
 * on a large home it takes a while, so the command says what it is doing (on stderr, so that
 * `--json` output stays clean).
 */
function reportUpgrade(progress: UpgradeProgress): void {
  const share = progress.total > 0 ? Math.floor((100 * progress.done) / progress.total) : 100;
  process.stderr.write(
    `upgrading the database layout: ${progress.step} ${progress.done}/${progress.total} (${share}%)\n`,
  );
}

/** Opens the home for a command; `closeHome` closes it (and the exit handler, if it is not). */
export function openHome(options: HomeOptions, create: boolean): StateHome {
  const home = openStateHome({ home: options.home, create, onUpgradeProgress: reportUpgrade });
  openHomes.add(home);
  return home;
}

export function closeHome(home: StateHome): void {
  openHomes.delete(home);
  home.close();
}

/** Opens the home for a command and closes it afterwards, also when the command throws. */
export function withHome<T>(options: HomeOptions, create: boolean, fn: (home: StateHome) => T): T {
  const path = resolveHomePath(options.home);
  if (create) refuseNestedCreation(path);
  const home = openHome({ home: path }, create);
  try {
    return fn(home);
  } finally {
    closeHome(home);
  }
}

/**
 * Opens the home for a command that only reads: every database read-only, so the command takes no
 * write lock and never waits on (or holds up) a live gateway's transactions.
 */
export function openReadHome(options: HomeOptions): StateHome {
  const home = openStateHome({
    home: options.home,
    readonly: true,
    onUpgradeProgress: reportUpgrade,
  });
  openHomes.add(home);
  return home;
}

/** `withHome` for commands that only read: see `openReadHome`. */
export function withReadHome<T>(options: HomeOptions, fn: (home: StateHome) => T): T {
  const home = openReadHome(options);
  try {
    return fn(home);
  } finally {
    closeHome(home);
  }
}

/** An integer flag value in [min, max], or `E_INVALID_ARGUMENT` naming the flag. */
const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration such as `90s`, `30m`, `6h` or `1d`, in milliseconds, at least `minMs`. */
export function parseDuration(flag: string, text: string, minMs: number): number {
  const match = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(text.trim());
  const ms = match ? Math.round(Number(match[1]) * (DURATION_UNITS[match[2] as string] ?? 0)) : NaN;
  if (!Number.isFinite(ms) || ms < minMs) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${flag} must be a duration such as 30s, 15m, 6h or 1d, at least ${minMs / 1000}s (got ${JSON.stringify(text)})`,
    );
  }
  return ms;
}

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

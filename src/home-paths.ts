import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { validateAgentId } from "./ids.js";

export const GLOBAL_DB_RELATIVE_PATH = join("state", "state.sqlite");

/** Where an agent's database lives, relative to the home. */
export function agentDbRelativePath(agentId: string): string {
  return join("agents", validateAgentId(agentId), "agent", "agent.sqlite");
}

/**
 * The home directory: the explicit option, else `$AGENTSTATE_HOME`, else `~/.agentstate`.
 * A leading `~/` is expanded so the same string works from a shell and from a config file.
 */
export function resolveHomePath(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  const chosen = explicit || env.AGENTSTATE_HOME || join(homedir(), ".agentstate");
  const expanded =
    chosen === "~" || chosen.startsWith("~/") ? join(homedir(), chosen.slice(1)) : chosen;
  return resolve(expanded);
}

import { existsSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * Where the gateways agentstate replaces keep their state: `~/.clawdbot` (Clawdbot, Moltbot),
 * `~/.openclaw` and its profiles `~/.openclaw-<profile>`, `~/.daycare` (earlier `~/.claybot`).
 */
const LEGACY_DIR = /^\.(openclaw(-[^/]+)?|clawdbot|moltbot|daycare|claybot)$/;
const MARKERS = [
  "openclaw.json",
  "clawdbot.json",
  "moltbot.json",
  "cron/jobs.json",
  "subagents/runs.json",
  "sessions/sessions.json",
];

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function hasAgentState(agents: string): boolean {
  if (!isDirectory(agents)) return false;
  return readdirSync(agents).some(
    (name) =>
      isDirectory(join(agents, name, "sessions")) ||
      existsSync(join(agents, name, "descriptor.json")),
  );
}

/** Whether `dir` holds a legacy gateway home (a config file, an agents/ tree, cron or sessions). */
export function looksLikeLegacyHome(dir: string): boolean {
  if (!isDirectory(dir)) return false;
  return (
    MARKERS.some((marker) => existsSync(join(dir, marker))) || hasAgentState(join(dir, "agents"))
  );
}

/** Legacy homes directly inside `dir` (`dir/.openclaw`, …), for "did you mean" hints. */
export function legacyHomesIn(dir: string): string[] {
  if (!isDirectory(dir)) return [];
  return readdirSync(dir)
    .filter((name) => LEGACY_DIR.test(name))
    .sort()
    .map((name) => join(dir, name))
    .filter(looksLikeLegacyHome);
}

/** What to tell an operator whose `--home` holds no legacy state: where it probably is. */
export function legacyHomeHint(home: string, userHome: string = homedir()): string | null {
  const below = legacyHomesIn(home);
  if (below.length > 0) {
    return `did you mean ${below.map((path) => `--home ${path}`).join(" or ")}?`;
  }
  const usual = legacyHomesIn(userHome).filter((path) => path !== home);
  if (usual.length > 0) return `legacy state found at ${usual.join(", ")}: pass it as --home`;
  return null;
}

/** The sentence for a home directory that does not exist. */
export function missingHomeHint(userHome: string = homedir()): string {
  const usual = legacyHomesIn(userHome);
  return usual.length > 0
    ? `legacy state found at ${usual.join(", ")}: pass it as --home`
    : `legacy gateway homes usually live in ~/.openclaw, ~/.clawdbot or ~/.daycare (none found in ${userHome}); pass yours as --home`;
}

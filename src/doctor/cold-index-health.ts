import { existsSync } from "node:fs";
import {
  type ColdIndexClaim,
  describeUncovered,
  readColdIndexClaims,
  type UncoveredClaim,
  uncoveredIn,
} from "../backup/cold-index-coverage.js";
import { readDamageMarker } from "../db/damage-marker.js";
import { coldIndexPathOf } from "../stores/agent/cold-index.js";
import { checkLines, damageOf, homeDatabases, readQuietly } from "./database-health.js";

/**
 * Why an agent's cold index cannot answer for its claims: the file is gone, SQLite finds it
 * damaged (or not a database at all), or it lacks rows the agent database claims it holds.
 */
export const COLD_INDEX_PROBLEM_CODES = [
  "cold-index-missing",
  "cold-index-damaged",
  "cold-index-uncovered",
] as const;
export type ColdIndexProblemCode = (typeof COLD_INDEX_PROBLEM_CODES)[number];

export interface ColdIndexProblem {
  agentId: string;
  /** The cold index file. */
  path: string;
  code: ColdIndexProblemCode;
  /** Names the agent and the file, and says what search loses. */
  message: string;
  /** How many cold sessions the agent database claims rows of in the file. */
  claims: number;
  /** What `integrity_check` said (or why the file could not be read); empty unless damaged. */
  integrity: string[];
  /** The claims whose rows the file does not all hold; empty unless uncovered. */
  uncovered: UncoveredClaim[];
}

/**
 * Checks the cold index of every agent database of the home against the agent's claims. Changes
 * nothing. An agent database quarantined as damaged is left out: its claims cannot be trusted,
 * and its salvage keeps only those of cold sessions, checked on the next run.
 */
export function checkColdIndexes(home: string): ColdIndexProblem[] {
  return homeDatabases(home).flatMap(({ path, agentId }) => {
    if (agentId === null || readDamageMarker(path) !== null) return [];
    const problem = checkColdIndex(agentId, path);
    return problem === null ? [] : [problem];
  });
}

/** The problem of one agent's cold index, or null when it covers every claim. */
export function checkColdIndex(agentId: string, agentDbPath: string): ColdIndexProblem | null {
  const claims = readQuietly(agentDbPath, (driver) => readColdIndexClaims(driver) ?? []);
  const path = coldIndexPathOf(agentDbPath);
  const base = { agentId, path, claims: claims.length, integrity: [], uncovered: [] };
  const who = `agent "${agentId}": its cold index ${path}`;
  if (!existsSync(path)) {
    if (claims.length === 0) return null;
    const message = `${who} is missing, while its database claims the search rows of ${claims.length} cold sessions there: search does not find their events`;
    return { ...base, code: "cold-index-missing", message };
  }
  const found = inspect(path, claims);
  if ("integrity" in found) {
    const first = found.integrity[0] ?? "damaged";
    const message = `${who} is damaged, so search of its cold sessions fails or misses events: ${first}`;
    return { ...base, code: "cold-index-damaged", message, integrity: found.integrity };
  }
  if (found.uncovered.length === 0) return null;
  const lacks = describeUncovered(found.uncovered, claims);
  const message = `${who} ${lacks}: search does not find their events`;
  return { ...base, code: "cold-index-uncovered", message, uncovered: found.uncovered };
}

/** `integrity_check` of the file (FTS5's own check included), then its claims counted. */
function inspect(
  path: string,
  claims: readonly ColdIndexClaim[],
): { integrity: string[] } | { uncovered: UncoveredClaim[] } {
  try {
    return readQuietly(path, (driver) => {
      const integrity = checkLines(driver, "integrity_check");
      return integrity.length > 0 ? { integrity } : { uncovered: uncoveredIn(driver, claims) };
    });
  } catch (error) {
    const damage = damageOf(error);
    if (damage !== undefined) return { integrity: [damage] };
    throw error;
  }
}

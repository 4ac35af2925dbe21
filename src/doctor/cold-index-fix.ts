import { isStateError } from "../db/errors.js";
import { openStateHome, type StateHome } from "../home.js";
import {
  type ColdIndexProblem,
  type ColdIndexProblemCode,
  checkColdIndexes,
} from "./cold-index-health.js";
import { type ColdIndexProgress, rebuildColdIndex } from "./cold-index-rebuild.js";

/** What `doctor --fix` did about one agent's cold index. */
export interface ColdIndexRepair {
  agentId: string;
  path: string;
  /** What the check found. */
  code: ColdIndexProblemCode;
  problem: string;
  status: "rebuilt" | "failed";
  /** Where the replaced file was kept (0600); null when there was none (or nothing changed). */
  keptAt: string | null;
  sessions: number;
  rows: number;
  /** Why the rebuild failed: the agent's cold index and claims are as they were. */
  error: string | null;
}

export interface RepairOptions {
  now?: number;
  onProgress?: (progress: ColdIndexProgress) => void;
}

/**
 * Checks every agent's cold index and rebuilds each one that cannot answer for its claims (see
 * `rebuildColdIndex`). An agent whose rebuild fails (an archive missing or damaged, say) is
 * reported with its error; the others are rebuilt all the same.
 */
export function repairColdIndexes(home: string, options: RepairOptions = {}): ColdIndexRepair[] {
  const problems = checkColdIndexes(home);
  if (problems.length === 0) return [];
  const state = openStateHome({ home });
  try {
    return problems.map((problem) => repair(state, problem, options));
  } finally {
    state.close();
  }
}

function repair(
  home: StateHome,
  problem: ColdIndexProblem,
  options: RepairOptions,
): ColdIndexRepair {
  const { agentId, path, code, message } = problem;
  const base = { agentId, path, code, problem: message };
  try {
    const rebuilt = home.withAgent(agentId, (agent) => rebuildColdIndex(agent, options), {
      create: false,
    });
    const { keptAt, sessions, rows } = rebuilt;
    return { ...base, status: "rebuilt", keptAt, sessions, rows, error: null };
  } catch (error) {
    if (!isStateError(error)) throw error;
    const failed = `${error.code}: ${error.message}`;
    return { ...base, status: "failed", keptAt: null, sessions: 0, rows: 0, error: failed };
  }
}

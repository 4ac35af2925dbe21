import { join } from "node:path";
import type { StateHome } from "../home.js";
import { directoryBytes } from "../maintenance/home-bytes.js";
import { loadPolicy, type MaintenancePolicy } from "../maintenance/policy.js";
import { coldDirOf, fileSize } from "../stores/agent/cold-files.js";

/** A byte budget from the maintenance policy (`agentstate.json`). */
export interface Budget {
  maxDiskBytes: number;
  highWaterBytes: number;
  /** Bytes over `maxDiskBytes` (0 when within it): what the next `gc` works down. */
  overBytes: number;
}

export interface AgentStorage {
  agentId: string;
  /** The agent database with its -wal and -shm: the hot data. */
  hotBytes: number;
  /**
   * Its cold directory: the archives of its cold sessions, their search index (`index.sqlite`) and
   * any move's leftover temp file.
   */
  coldBytes: number;
  /** Every file under the agent's directory (`agents/<id>/`), hot and cold included. */
  totalBytes: number;
  /** The agent's own budget (`agents.<id>.maxDiskBytes`), or null. */
  budget: Budget | null;
}

export interface HomeStorage {
  /** Every file under the home, whatever it is: the number the home's budget is held to. */
  homeBytes: number;
  budget: Budget | null;
  agents: AgentStorage[];
  /** Set when agentstate.json cannot be read: the budget is then unknown, not absent. */
  policyError?: string;
}

function budgetOf(
  maxDiskBytes: number | null,
  highWater: number | null,
  bytes: number,
): Budget | null {
  if (maxDiskBytes === null) return null;
  return {
    maxDiskBytes,
    highWaterBytes: highWater ?? Math.floor(maxDiskBytes * 0.8),
    overBytes: Math.max(0, bytes - maxDiskBytes),
  };
}

function readPolicy(homePath: string): { policy: MaintenancePolicy | null; error?: string } {
  try {
    return { policy: loadPolicy(homePath) };
  } catch (error) {
    return { policy: null, error: (error as Error).message };
  }
}

/**
 * Hot and cold bytes per agent, the home's total, and each against its budget. Sizes come from
 * the files alone (no database is opened): the budget counts every byte of the home, and so does
 * this.
 */
export function describeStorage(home: StateHome): HomeStorage {
  const { policy, error } = readPolicy(home.path);
  const agents = home.listAgents().map(({ agentId, dbPath }): AgentStorage => {
    const totalBytes = directoryBytes(join(home.path, "agents", agentId));
    const own = policy?.agents[agentId];
    return {
      agentId,
      hotBytes: [dbPath, `${dbPath}-wal`, `${dbPath}-shm`].reduce(
        (sum, path) => sum + (fileSize(path) ?? 0),
        0,
      ),
      coldBytes: directoryBytes(coldDirOf(dbPath)),
      totalBytes,
      budget: own ? budgetOf(own.maxDiskBytes, own.highWaterBytes, totalBytes) : null,
    };
  });
  const homeBytes = directoryBytes(home.path);
  const rules = policy?.home;
  return {
    homeBytes,
    budget: rules ? budgetOf(rules.maxDiskBytes, rules.highWaterBytes, homeBytes) : null,
    agents,
    ...(error ? { policyError: error } : {}),
  };
}

import type { Database } from "../db/database.js";
import { isStateError } from "../db/errors.js";
import { vacuumDatabase } from "../db/vacuum.js";
import type { AgentSource, AgentState } from "../stores/agent/agent-state.js";
import { readGlobalWaits, readSessionFacts } from "./facts.js";
import { measureHome } from "./home-bytes.js";
import {
  type BudgetPlan,
  type HomeBytes,
  type MaintenancePlan,
  type PlannedAction,
  planMaintenance,
} from "./plan.js";
import {
  loadPolicy,
  type MaintenanceOverrides,
  type MaintenancePolicy,
  rulesFor,
} from "./policy.js";
import { type Protection, protectionsOf, type SessionFacts } from "./protection.js";

/** What maintenance needs of a home: its root, its global database and its agents. */
export interface MaintenanceHost extends AgentSource {
  readonly path: string;
  readonly db: Database;
}

export interface MaintenanceOptions {
  /** This run's overrides of the home's `agentstate.json` (the CLI's flags). */
  overrides?: MaintenanceOverrides;
  /** Told one line per action as it is applied (the CLI prints them on stderr). */
  onProgress?: (line: string) => void;
}

/** What counts toward a budget, said in every report so that nobody has to guess. */
export const BYTES_COUNTED =
  "every file under the home directory (databases, -wal and -shm, cold archives, backups, config, anything else)";

export interface PlanReport extends MaintenancePlan {
  home: string;
  policy: MaintenancePolicy;
  bytes: HomeBytes;
  bytesCounted: string;
  /** Agents whose database could not be read: none of their sessions is planned. */
  unreadable: { agentId: string; error: string }[];
}

export type ActionStatus = "done" | "skipped" | "warned" | "failed";

export interface ActionOutcome extends PlannedAction {
  status: ActionStatus;
  /** Why an action was skipped or failed. */
  detail?: string;
  /** The protections found when it was skipped at execution time. */
  protections?: Protection[];
}

export interface BudgetOutcome extends BudgetPlan {
  /** Measured after the run, by the same walk. */
  bytesAfter: number;
  /** At or under the high-water mark after the run, or never over the budget. */
  met: boolean;
  /** Why not, when not met. */
  why: string | null;
}

export interface RunReport extends PlanReport {
  outcomes: ActionOutcome[];
  budgetOutcomes: BudgetOutcome[];
  bytesAfter: HomeBytes;
}

const ESTIMATE_SHORT =
  "the actions freed fewer bytes than estimated (or other writes added some meanwhile): the next gc plans from the new size";

/** Whether any rule can select a session: without one, no session needs reading. */
function acts(policy: MaintenancePolicy): boolean {
  return [policy.home, ...Object.values(policy.agents)].some(
    (r) => r.coldAfterDays !== null || r.pruneAfterDays !== null || r.maxDiskBytes !== null,
  );
}

/**
 * The sessions of every registered agent, each agent read in one snapshot. An agent that cannot be
 * read (a damaged database) is left out and named: the others are still planned.
 */
function readAllFacts(host: MaintenanceHost, now: number, unreadable: PlanReport["unreadable"]) {
  return host.listAgents().flatMap(({ agentId }): SessionFacts[] => {
    try {
      const waits = readGlobalWaits(host.db, agentId);
      const read = ({ db }: AgentState) =>
        db.snapshot(() => readSessionFacts(db, agentId, waits, now));
      return host.withAgent(agentId, read, { create: false });
    } catch (error) {
      unreadable.push({ agentId, error: error instanceof Error ? error.message : String(error) });
      return [];
    }
  });
}

/** The plan for the home as it is now, under its policy and `overrides`. */
export function planHome(host: MaintenanceHost, options: MaintenanceOptions = {}): PlanReport {
  const policy = loadPolicy(host.path, options.overrides);
  const now = Date.now();
  const bytes = measureHome(
    host.path,
    host.listAgents().map((a) => a.agentId),
  );
  const unreadable: PlanReport["unreadable"] = [];
  const sessions = acts(policy) ? readAllFacts(host, now, unreadable) : [];
  const plan = planMaintenance({ policy, sessions, bytes, now });
  return { home: host.path, policy, bytes, bytesCounted: BYTES_COUNTED, unreadable, ...plan };
}

/** The session's protections now, read again; "gone" when it no longer exists. */
function recheck(
  host: MaintenanceHost,
  agent: AgentState,
  sessionId: string,
): Protection[] | "gone" {
  const now = Date.now();
  const waits = readGlobalWaits(host.db, agent.agentId);
  const [facts] = readSessionFacts(agent.db, agent.agentId, waits, now, sessionId);
  return facts === undefined ? "gone" : protectionsOf(facts, now);
}

function applyCold(host: MaintenanceHost, agent: AgentState, action: PlannedAction): ActionOutcome {
  const found = agent.db.snapshot(() => recheck(host, agent, action.sessionId));
  if (found === "gone")
    return { ...action, status: "skipped", detail: "the session no longer exists" };
  if (found.length > 0)
    return { ...action, status: "skipped", detail: "protected now", protections: found };
  try {
    const moved = agent.transcripts.cold.move(action.sessionId);
    if (moved.alreadyCold) return { ...action, status: "skipped", detail: "already cold" };
    return { ...action, status: "done" };
  } catch (error) {
    // The move's own commit refuses a session appended to since it was read: it is active again.
    if (isStateError(error, "E_CONFLICT")) {
      return { ...action, status: "skipped", detail: "appended to while it was being moved" };
    }
    throw error;
  }
}

/** A prune checks protection again in the transaction that deletes: nothing slips in between. */
function applyPrune(
  host: MaintenanceHost,
  agent: AgentState,
  action: PlannedAction,
): ActionOutcome {
  const outcome = agent.db.tx((): ActionOutcome => {
    const found = recheck(host, agent, action.sessionId);
    if (found === "gone")
      return { ...action, status: "skipped", detail: "the session no longer exists" };
    if (found.length > 0)
      return { ...action, status: "skipped", detail: "protected now", protections: found };
    agent.lifecycle.delete(action.sessionId);
    return { ...action, status: "done" };
  });
  // A cold session's archive goes once the transaction that deleted its rows has committed.
  agent.transcripts.cold.removeReleasedFiles();
  return outcome;
}

function applyOne(host: MaintenanceHost, agent: AgentState, action: PlannedAction): ActionOutcome {
  try {
    return action.action === "cold"
      ? applyCold(host, agent, action)
      : applyPrune(host, agent, action);
  } catch (error) {
    return {
      ...action,
      status: "failed",
      detail: error instanceof Error ? error.message : String(error),
    };
  }
}

/**
 * Retries the TRUNCATE checkpoint a few times: the background checkpointer's read of the moment
 * makes one fail now and then, and the walk after the run would count a WAL about to be emptied.
 */
function emptyWal(db: Database): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 0; attempt < 20 && db.checkpoint("TRUNCATE").busy; attempt++) {
    Atomics.wait(pause, 0, 0, 10);
  }
}

function byAgent(actions: readonly PlannedAction[]): Map<string, PlannedAction[]> {
  const groups = new Map<string, PlannedAction[]>();
  for (const a of actions) groups.set(a.agentId, [...(groups.get(a.agentId) ?? []), a]);
  return groups;
}

/**
 * Applies `plan`: each action re-checks its session's protection at execution time, inside the
 * agent (a session that became active, running, pinned… since the plan is skipped and reported,
 * never moved). Agents in `warn` mode change nothing: their actions are reported as `warned`.
 * With a budget in play, each agent that changed gives its free pages back, so that the walk
 * after the run sees the bytes the actions freed.
 */
export function runPlan(
  host: MaintenanceHost,
  plan: PlanReport,
  options: MaintenanceOptions = {},
): RunReport {
  const outcomes: ActionOutcome[] = [];
  const total = plan.actions.length;
  const budgeted = plan.budgets.length > 0;
  for (const [agentId, actions] of byAgent(plan.actions)) {
    if (rulesFor(plan.policy, agentId).mode === "warn") {
      outcomes.push(...actions.map((a) => ({ ...a, status: "warned" as const })));
      continue;
    }
    host.withAgent(
      agentId,
      (agent) => {
        for (const action of actions) {
          const outcome = applyOne(host, agent, action);
          outcomes.push(outcome);
          options.onProgress?.(
            `[${outcomes.length}/${total}] ${action.action} ${agentId}/${action.sessionId}: ${outcome.status}${outcome.detail ? ` (${outcome.detail})` : ""}`,
          );
        }
        if (budgeted && outcomes.some((o) => o.agentId === agentId && o.status === "done")) {
          vacuumDatabase(agent.db);
          emptyWal(agent.db);
        }
      },
      { create: false },
    );
  }
  const bytesAfter = measureHome(host.path, Object.keys(plan.bytes.agents));
  const budgetOutcomes = plan.budgets.map((b) => {
    const after = b.agentId === null ? bytesAfter.total : (bytesAfter.agents[b.agentId] ?? 0);
    const met = b.bytes <= b.maxDiskBytes || after <= b.highWaterBytes;
    const why = met ? null : (b.short ?? ESTIMATE_SHORT);
    return { ...b, bytesAfter: after, met, why };
  });
  return { ...plan, outcomes, budgetOutcomes, bytesAfter };
}

import type { MaintenancePolicy, MaintenanceRules } from "./policy.js";
import { rulesFor } from "./policy.js";
import { type Protection, protectionsOf, type SessionFacts } from "./protection.js";

const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * Of a session's hot bytes, the share a move is counted to free. Gzip leaves 10-30% of a
 * transcript, and the search index drops its rows with delete markers that stay until a merge:
 * counted low, so that a budget's plan reaches its mark rather than falls short of it.
 */
export const COLD_FREED_SHARE = 0.5;
/** Of its index text, the share a prune is counted to free (postings and markers as above). */
export const INDEX_FREED_SHARE = 0.5;

export type MaintenanceActionKind = "cold" | "prune";

export interface PlannedAction {
  agentId: string;
  sessionId: string;
  action: MaintenanceActionKind;
  /** Estimated bytes the action frees. */
  bytes: number;
  reason: string;
}

/** Bytes of every file under the home, and under each agent's directory. */
export interface HomeBytes {
  total: number;
  agents: Readonly<Record<string, number>>;
}

export interface BudgetPlan {
  /** null: the whole home; else one agent's directory. */
  agentId: string | null;
  maxDiskBytes: number;
  highWaterBytes: number;
  bytes: number;
  /** `bytes` less what the plan's actions in this scope are estimated to free. */
  projectedBytes: number;
  /** Why the plan cannot reach the high-water mark, or null. */
  short: string | null;
}

export interface ProtectedSession {
  agentId: string;
  sessionId: string;
  protections: Protection[];
}

export interface MaintenancePlan {
  plannedAt: number;
  actions: PlannedAction[];
  budgets: BudgetPlan[];
  protected: ProtectedSession[];
}

export interface PlanInput {
  policy: MaintenancePolicy;
  sessions: readonly SessionFacts[];
  bytes: HomeBytes;
  now: number;
}

const keyOf = (s: { agentId: string; sessionId: string }) => `${s.agentId}\0${s.sessionId}`;

/**
 * Bytes an action is counted to free, low rather than high: a move leaves its archive and its
 * search index rows behind, a prune nothing.
 */
export function freedBytes(s: SessionFacts, action: MaintenanceActionKind): number {
  if (action === "prune")
    return s.hotBytes + s.coldBytes + Math.floor(s.indexBytes * INDEX_FREED_SHARE);
  return Math.floor(s.hotBytes * COLD_FREED_SHARE);
}

/** Sessions among the `keepRecent` newest of their key (by creation), per agent. */
function keptRecent(sessions: readonly SessionFacts[], policy: MaintenancePolicy): Set<string> {
  const byKey = new Map<string, SessionFacts[]>();
  for (const s of sessions) {
    if (s.sessionKey === null) continue;
    const k = `${s.agentId}\0${s.sessionKey}`;
    byKey.set(k, [...(byKey.get(k) ?? []), s]);
  }
  const kept = new Set<string>();
  for (const group of byKey.values()) {
    const first = group[0] as SessionFacts;
    const n = rulesFor(policy, first.agentId).keepRecent ?? 0;
    group.sort((a, b) => b.createdAt - a.createdAt || b.sessionNo - a.sessionNo);
    for (const s of group.slice(0, n)) kept.add(keyOf(s));
  }
  return kept;
}

interface Judged {
  facts: SessionFacts;
  rules: MaintenanceRules;
  idleDays: number;
  /** Archived or ended, unprotected, not among the key's recent ones. */
  prunable: boolean;
}

function ageAction(j: Judged): PlannedAction | undefined {
  const { facts: s, rules, idleDays } = j;
  const idle = `idle ${Math.floor(idleDays)} days`;
  if (j.prunable && rules.pruneAfterDays !== null && idleDays >= rules.pruneAfterDays) {
    const kind = s.archived ? "archived" : "ended";
    const reason = `${kind}, ${idle} (pruneAfterDays ${rules.pruneAfterDays})`;
    return {
      agentId: s.agentId,
      sessionId: s.sessionId,
      action: "prune",
      bytes: freedBytes(s, "prune"),
      reason,
    };
  }
  if (!s.cold && s.events > 0 && rules.coldAfterDays !== null && idleDays >= rules.coldAfterDays) {
    const reason = `${idle} (coldAfterDays ${rules.coldAfterDays})`;
    return {
      agentId: s.agentId,
      sessionId: s.sessionId,
      action: "cold",
      bytes: freedBytes(s, "cold"),
      reason,
    };
  }
  return undefined;
}

/**
 * The maintenance plan for `input`: pure, no I/O, so what `gc --plan` prints is what `gc` does.
 * First the age rules per agent (prune archived or ended sessions past `pruneAfterDays`, move hot
 * sessions past `coldAfterDays`); then each budget that is exceeded (an agent's own first, then
 * the home's) works down to its high-water mark, oldest idle first: moving idle hot sessions
 * cold, then, if that is not enough, pruning archived or ended ones (a planned move becomes a
 * prune). A protected session (see protection.ts) and one of its key's `keepRecent` newest are
 * never pruned; a protected one is never moved either.
 */
export function planMaintenance(input: PlanInput): MaintenancePlan {
  const { policy, now } = input;
  const kept = keptRecent(input.sessions, policy);
  const planned = new Map<string, PlannedAction>();
  const judged: Judged[] = [];
  const protectedOnes: ProtectedSession[] = [];
  for (const facts of input.sessions) {
    const protections = protectionsOf(facts, now);
    if (protections.length > 0) {
      protectedOnes.push({ agentId: facts.agentId, sessionId: facts.sessionId, protections });
      continue;
    }
    const rules = rulesFor(policy, facts.agentId);
    const prunable = (facts.archived || facts.ended) && !kept.has(keyOf(facts));
    const j = { facts, rules, idleDays: (now - facts.lastActivityAt) / DAY_MS, prunable };
    judged.push(j);
    const action = ageAction(j);
    if (action) planned.set(keyOf(facts), action);
  }
  judged.sort(
    (a, b) =>
      a.facts.lastActivityAt - b.facts.lastActivityAt || a.facts.sessionNo - b.facts.sessionNo,
  );
  const budgets: BudgetPlan[] = [];
  for (const [agentId, rules] of Object.entries(policy.agents)) {
    const bytes = input.bytes.agents[agentId] ?? 0;
    const inScope = judged.filter((j) => j.facts.agentId === agentId);
    const budget = workDown(agentId, rules, bytes, inScope, planned);
    if (budget) budgets.push(budget);
  }
  const home = workDown(null, policy.home, input.bytes.total, judged, planned);
  if (home) budgets.push(home);
  return { plannedAt: now, actions: [...planned.values()], budgets, protected: protectedOnes };
}

function projected(
  bytes: number,
  scope: readonly Judged[],
  planned: Map<string, PlannedAction>,
): number {
  let left = bytes;
  for (const j of scope) left -= planned.get(keyOf(j.facts))?.bytes ?? 0;
  return left;
}

/** One budget: the moves, then the prunes, oldest idle first, until the high-water mark is reached. */
function workDown(
  agentId: string | null,
  rules: MaintenanceRules,
  bytes: number,
  scope: readonly Judged[],
  planned: Map<string, PlannedAction>,
): BudgetPlan | undefined {
  const { maxDiskBytes, highWaterBytes } = rules;
  if (maxDiskBytes === null || highWaterBytes === null) return undefined;
  let left = projected(bytes, scope, planned);
  const over = bytes > maxDiskBytes;
  const reason = `budget: ${agentId === null ? "home" : `agent ${agentId}`} over maxDiskBytes ${maxDiskBytes}, oldest idle first`;
  for (const j of over ? scope : []) {
    if (left <= highWaterBytes) break;
    const s = j.facts;
    if (s.cold || s.events === 0 || planned.has(keyOf(s))) continue;
    const freed = freedBytes(s, "cold");
    planned.set(keyOf(s), {
      agentId: s.agentId,
      sessionId: s.sessionId,
      action: "cold",
      bytes: freed,
      reason,
    });
    left -= freed;
  }
  for (const j of over ? scope : []) {
    if (left <= highWaterBytes) break;
    const s = j.facts;
    const before = planned.get(keyOf(s));
    if (!j.prunable || before?.action === "prune") continue;
    const freed = freedBytes(s, "prune");
    planned.set(keyOf(s), {
      agentId: s.agentId,
      sessionId: s.sessionId,
      action: "prune",
      bytes: freed,
      reason,
    });
    left -= freed - (before?.bytes ?? 0);
  }
  const short =
    over && left > highWaterBytes
      ? "the sessions left are protected, among the newest of their key, or neither archived nor ended"
      : null;
  return { agentId, maxDiskBytes, highWaterBytes, bytes, projectedBytes: left, short };
}

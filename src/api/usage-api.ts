import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import type { AgentSource } from "../stores/agent/agent-state.js";
import type { SessionModelUsage } from "../stores/agent/session-usage.js";
import type { DailyUsage, UsageRange } from "../stores/agent/usage-query.js";

export const USAGE_GROUPINGS = ["day", "model", "agent"] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

export interface UsageQueryOptions extends UsageRange {
  /** Only this agent (default: every registered agent). */
  agentId?: string;
  /** What one row of the report sums over (default `day`). */
  by?: UsageGrouping;
}

/** Sums over a report's rows (also one row's own): a day's usage without its grouping keys. */
export type UsageTotals = Omit<DailyUsage, "dayStartAt" | "provider" | "model">;

/** One row of a report: the fields it is grouped by are set, the others null. */
export interface UsageGroup extends UsageTotals {
  /** `YYYY-MM-DD` (UTC) when grouped by day. */
  day: string | null;
  agentId: string | null;
  /** When grouped by model: '' for events that name no provider or model. */
  provider: string | null;
  model: string | null;
}

export interface UsageReport {
  by: UsageGrouping;
  groups: UsageGroup[];
  totals: UsageTotals;
}

/** Tokens of every kind: input, output, cache read and cache write. */
export interface TokenTotal {
  totalTokens: number;
}

/** One provider and model's usage within a session ('' for events naming none). */
export type SessionUsageGroup = SessionModelUsage & TokenTotal;

export interface SessionUsageReport {
  agentId: string;
  sessionId: string;
  sessionKey: string | null;
  /** True when the events were read from the session's cold archive. */
  cold: boolean;
  /** By cost, then tokens, then name, like a report by model. */
  models: SessionUsageGroup[];
  totals: UsageTotals & TokenTotal;
}

/** Events of one agent on one UTC day. */
export interface AgentDayEvents {
  agentId: string;
  day: string;
  events: number;
}

const OPTION_KEYS = new Set(["agentId", "since", "until", "by"]);
const NO_CREATE = Object.freeze({ create: false });
const SUMMED = [
  "events",
  "messages",
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "cost",
  "pricedMessages",
] as const satisfies readonly (keyof UsageTotals)[];

function zero(): UsageTotals {
  return Object.fromEntries(SUMMED.map((field) => [field, 0])) as unknown as UsageTotals;
}

function add(into: UsageTotals, row: UsageTotals): void {
  for (const field of SUMMED) into[field] += row[field];
}

function withTotal<T extends UsageTotals>(row: T): T & TokenTotal {
  const totalTokens =
    row.inputTokens + row.outputTokens + row.cacheReadTokens + row.cacheWriteTokens;
  return { ...row, totalTokens };
}

function dayOf(dayStartAt: number): string {
  return new Date(dayStartAt).toISOString().slice(0, 10);
}

function groupOf(by: UsageGrouping, agentId: string, row: DailyUsage): UsageGroup {
  return {
    ...zero(),
    day: by === "day" ? dayOf(row.dayStartAt) : null,
    agentId: by === "agent" ? agentId : null,
    provider: by === "model" ? row.provider : null,
    model: by === "model" ? row.model : null,
  };
}

function checkGrouping(by: unknown): UsageGrouping {
  if (USAGE_GROUPINGS.includes(by as UsageGrouping)) return by as UsageGrouping;
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `by must be one of ${USAGE_GROUPINGS.join(", ")}, got ${JSON.stringify(by)}`,
  );
}

/**
 * Token usage, recorded cost and activity across agents, read from each agent's daily rollups
 * (never from the events): one agent open at a time through the pool, whatever their number.
 */
export class UsageApi {
  constructor(private readonly home: AgentSource) {}

  /** Sums by day, model or agent over the UTC days holding `since` through `until`. */
  query(options: UsageQueryOptions = {}): UsageReport {
    rejectUnknownOptions(options, OPTION_KEYS, "usage.query");
    const by = checkGrouping(options.by ?? "day");
    const groups = new Map<string, UsageGroup>();
    const totals = zero();
    this.eachDay(options, (agentId, row) => {
      const group = groupOf(by, agentId, row);
      const key = JSON.stringify([group.day, group.agentId, group.provider, group.model]);
      const found = groups.get(key) ?? group;
      groups.set(key, found);
      add(found, row);
      add(totals, row);
    });
    return { by, groups: [...groups.values()].sort(orderOf(by)), totals };
  }

  /** Events (of every type) per agent and UTC day, by agent then day. */
  eventsPerDay(options: Omit<UsageQueryOptions, "by"> = {}): AgentDayEvents[] {
    rejectUnknownOptions(options, OPTION_KEYS, "usage.eventsPerDay");
    const out = new Map<string, AgentDayEvents>();
    this.eachDay(options, (agentId, row) => {
      const day = dayOf(row.dayStartAt);
      const key = `${agentId}\u0000${day}`;
      const found = out.get(key) ?? { agentId, day, events: 0 };
      found.events += row.events;
      out.set(key, found);
    });
    return [...out.values()];
  }

  /**
   * One session's usage by model, summed from its own events (hot rows or its cold archive), not
   * from the daily rollups, which do not keep sessions apart. `E_NOT_FOUND` for an unknown session.
   */
  session(agentId: string, sessionId: string): SessionUsageReport {
    return this.home.withAgent(
      agentId,
      (agent) => {
        const { sessionKey } = agent.lifecycle.get(sessionId);
        const { cold, models } = agent.sessionUsage.bySession(sessionId);
        const totals = zero();
        for (const row of models) add(totals, row);
        const groups = models.map(withTotal);
        groups.sort(byCost((g) => `${g.provider}/${g.model}`));
        return { agentId, sessionId, sessionKey, cold, models: groups, totals: withTotal(totals) };
      },
      NO_CREATE,
    );
  }

  /** Calls `fn` with every rollup row of the chosen agents, one agent held open at a time. */
  private eachDay(
    options: UsageQueryOptions,
    fn: (agentId: string, row: DailyUsage) => void,
  ): void {
    const range = { since: options.since, until: options.until };
    const agents = options.agentId
      ? [options.agentId]
      : this.home.listAgents().map((a) => a.agentId);
    for (const agentId of agents) {
      const rows = this.home.withAgent(agentId, (agent) => agent.usage.byDay(range), NO_CREATE);
      for (const row of rows) fn(agentId, row);
    }
  }
}

/** Days oldest first; models and agents by cost, then tokens, then name. */
function orderOf(by: UsageGrouping): (a: UsageGroup, b: UsageGroup) => number {
  if (by === "day") return (a, b) => ((a.day ?? "") < (b.day ?? "") ? -1 : 1);
  return byCost((g) => g.agentId ?? `${g.provider}/${g.model}`);
}

function byCost<T extends UsageTotals>(name: (g: T) => string): (a: T, b: T) => number {
  const tokens = (g: T) => g.inputTokens + g.outputTokens + g.cacheReadTokens;
  return (a, b) =>
    b.cost - a.cost ||
    tokens(b) - tokens(a) ||
    (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0);
}

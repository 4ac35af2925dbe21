import { isRecord } from "./record.js";

const DAY_MS = 86_400_000;
const MAX_COUNTED = 1_000_000_000;

/**
 * What one event adds to its day's usage rollup. The same rules as the `usage_event_facts` view
 * of agent/0012_usage_rollups.sql, applied to an event in memory so that an append's rollup costs
 * no JSON parsing; the rollup tests hold the two to the same independent sums.
 */
export interface UsageFacts {
  /** Unix ms of the day's start, 00:00 UTC. */
  dayStartAt: number;
  provider: string;
  model: string;
  /** Assistant messages. */
  messages: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The sum of the costs the messages recorded (`usage.cost.total`); none is ever estimated. */
  cost: number;
  /** Assistant messages that recorded a cost: `messages - pricedMessages` have none. */
  pricedMessages: number;
}

function tokens(value: unknown): number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_COUNTED
    ? (value as number)
    : 0;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The facts of an event written at `createdAt` (Unix ms; its UTC day, floored). */
export function usageFactsOf(
  event: { type: string; message?: unknown },
  createdAt: number,
): UsageFacts {
  const dayStartAt = createdAt - (((createdAt % DAY_MS) + DAY_MS) % DAY_MS);
  const message = event.message;
  if (event.type !== "message" || !isRecord(message) || message.role !== "assistant") {
    return { dayStartAt, provider: "", model: "", ...NOTHING };
  }
  const usage = isRecord(message.usage) ? message.usage : {};
  const total = isRecord(usage.cost) ? usage.cost.total : undefined;
  const priced = typeof total === "number" && total >= 0 && total <= MAX_COUNTED;
  return {
    dayStartAt,
    provider: text(message.provider),
    model: text(message.model),
    messages: 1,
    inputTokens: tokens(usage.input),
    outputTokens: tokens(usage.output),
    cacheReadTokens: tokens(usage.cacheRead),
    cacheWriteTokens: tokens(usage.cacheWrite),
    cost: priced ? total : 0,
    pricedMessages: priced ? 1 : 0,
  };
}

const NOTHING = {
  messages: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cost: 0,
  pricedMessages: 0,
} as const;

/** The counts of `UsageFacts`, summed. */
export type UsageCounts = Omit<UsageFacts, "dayStartAt" | "provider" | "model">;

/** Adds one event's facts to a running sum, counting the event. */
export function addUsageFacts(sum: UsageCounts & { events: number }, facts: UsageCounts): void {
  sum.events += 1;
  sum.messages += facts.messages;
  sum.inputTokens += facts.inputTokens;
  sum.outputTokens += facts.outputTokens;
  sum.cacheReadTokens += facts.cacheReadTokens;
  sum.cacheWriteTokens += facts.cacheWriteTokens;
  sum.cost += facts.cost;
  sum.pricedMessages += facts.pricedMessages;
}

/**
 * Usage sums computed straight from event records, by the rules docs/api.md states (an
 * independent oracle for the rollups: it never reads the database or the code under test).
 */
export interface OracleRow {
  dayStartAt: number;
  provider: string;
  model: string;
  events: number;
  messages: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  cost: number;
  pricedMessages: number;
}

const DAY = 86_400_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function tokens(value: unknown): number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 1e9
    ? (value as number)
    : 0;
}

/** What one event adds: its row key and sums. `time` is the event's Unix ms. */
export function contributionOf(event: Record<string, unknown>, time: number): OracleRow {
  const message = isObject(event.message) ? event.message : undefined;
  const assistant = event.type === "message" && message?.role === "assistant";
  const usage = assistant && isObject(message?.usage) ? message.usage : {};
  const total = isObject(usage.cost) ? usage.cost.total : undefined;
  const priced = typeof total === "number" && total >= 0 && total <= 1e9;
  const text = (value: unknown) => (assistant && typeof value === "string" ? value : "");
  return {
    dayStartAt: Math.floor(time / DAY) * DAY,
    provider: text(message?.provider),
    model: text(message?.model),
    events: 1,
    messages: assistant ? 1 : 0,
    inputTokens: tokens(usage.input),
    outputTokens: tokens(usage.output),
    cacheReadTokens: tokens(usage.cacheRead),
    cacheWriteTokens: tokens(usage.cacheWrite),
    cost: priced ? total : 0,
    pricedMessages: priced ? 1 : 0,
  };
}

/** Sums by day, provider and model, sorted like the store's rows; costs rounded to 1e-9. */
export function sumByDay(rows: Iterable<OracleRow>): OracleRow[] {
  const sums = new Map<string, OracleRow>();
  for (const row of rows) {
    const key = JSON.stringify([row.dayStartAt, row.provider, row.model]);
    const sum = sums.get(key);
    if (sum === undefined) {
      sums.set(key, { ...row });
      continue;
    }
    for (const field of NUMBERS) sum[field] += row[field];
  }
  return [...sums.values()].map(roundCost).sort(byKey);
}

const NUMBERS = [
  "events",
  "messages",
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "cost",
  "pricedMessages",
] as const;

export function roundCost<T extends { cost: number }>(row: T): T {
  return { ...row, cost: Math.round(row.cost * 1e9) / 1e9 };
}

function byKey(a: OracleRow, b: OracleRow): number {
  return (
    a.dayStartAt - b.dayStartAt ||
    (a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : 0) ||
    (a.model < b.model ? -1 : a.model > b.model ? 1 : 0)
  );
}

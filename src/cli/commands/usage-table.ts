import { renderTable } from "../output.js";
import { sanitize } from "../render/style.js";

/** The counts a usage row shows (a group, a session's model, or their total). */
interface UsageCells {
  events: number;
  messages: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  totalTokens?: number;
  cost: number;
}

/** "provider/model", or "(no model)" for events that name none. */
export function modelName(provider: string | null, model: string | null): string {
  const name = [provider ?? "", model ?? ""].filter((part) => part !== "").join("/");
  return name === "" ? "(no model)" : sanitize(name);
}

/** The usage table of `agentstate usage`: one row per key, then TOTAL. */
export function renderUsageTable(
  keyHeader: string,
  rows: readonly { key: string; g: UsageCells }[],
  options: { totalTokens?: boolean } = {},
): string {
  const count = (header: string, cell: (g: UsageCells) => number) => ({
    header,
    value: (r: { g: UsageCells }) => cell(r.g),
    align: "right" as const,
  });
  return renderTable(rows, [
    { header: keyHeader, value: (r) => r.key, max: 48 },
    count("EVENTS", (g) => g.events),
    count("MESSAGES", (g) => g.messages),
    count("INPUT", (g) => g.inputTokens),
    count("OUTPUT", (g) => g.outputTokens),
    count("CACHE READ", (g) => g.cacheReadTokens),
    count("CACHE WRITE", (g) => g.cacheWriteTokens),
    ...(options.totalTokens ? [count("TOTAL TOKENS", (g) => g.totalTokens ?? 0)] : []),
    { header: "COST", value: (r) => r.g.cost.toFixed(4), align: "right" },
  ]);
}

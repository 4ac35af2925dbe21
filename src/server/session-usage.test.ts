import { describe, expect, it } from "vitest";
import type { SessionUsageReport } from "../api/usage-api.js";
import { openStateHome, type StateHome } from "../home.js";
import { corpusTranscripts, sessionIdOfFile } from "../test-support/corpus.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { contributionOf, type OracleRow, roundCost } from "../test-support/usage-oracle.js";
import { parseJsonl } from "../transcript/jsonl-codec.js";
import { createApp } from "./app.js";

const tempDir = useTempDirs();
const ORIGIN = "http://127.0.0.1:4711";
const corpus = corpusTranscripts();

/** Usage without `events` (an import may add a session header) and without the day. */
type Usage = Omit<OracleRow, "events" | "dayStartAt" | "provider" | "model">;
const FIELDS = [
  "messages",
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "cost",
  "pricedMessages",
] as const satisfies readonly (keyof Usage)[];

function usageOf(row: Usage): Usage {
  return roundCost(Object.fromEntries(FIELDS.map((f) => [f, row[f]])) as unknown as Usage);
}

interface Expected {
  models: Map<string, Usage>;
  totals: Usage;
  /** Assistant messages whose usage object is missing or lacks a token count or a cost. */
  incomplete: number;
}

/** Sums straight from the JSONL lines, each event id once, by the rules docs/api.md states. */
function sumLines(text: string): Expected {
  const models = new Map<string, Usage>();
  const totals = Object.fromEntries(FIELDS.map((f) => [f, 0])) as unknown as Usage;
  const seen = new Set<string>();
  let incomplete = 0;
  for (const line of text.split("\n")) {
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (seen.has(String(event.id))) continue;
    seen.add(String(event.id));
    const row = contributionOf(event, 0);
    if (row.messages === 0) continue;
    const usage = (event.message as { usage?: Record<string, unknown> }).usage;
    const tokens = ["input", "output", "cacheRead", "cacheWrite"];
    if (usage === undefined || row.pricedMessages === 0) incomplete++;
    else if (tokens.some((k) => !Number.isInteger(usage[k]))) incomplete++;
    const key = `${row.provider}/${row.model}`;
    const sum = models.get(key) ?? usageOf(row);
    if (models.has(key)) for (const f of FIELDS) sum[f] += row[f];
    models.set(key, sum);
    for (const f of FIELDS) totals[f] += row[f];
  }
  return {
    models: new Map([...models].map(([k, v]) => [k, usageOf(v)])),
    totals: usageOf(totals),
    incomplete,
  };
}

async function usageOverHttp(home: StateHome, sessionId: string): Promise<SessionUsageReport> {
  const { app, close } = createApp({ home });
  try {
    const res = await app.request(`${ORIGIN}/api/agents/main/transcripts/${sessionId}/usage`);
    expect(res.status).toBe(200);
    return (await res.json()) as SessionUsageReport;
  } finally {
    close();
  }
}

function got(report: SessionUsageReport) {
  const models = new Map(
    report.models
      .filter((m) => m.messages > 0)
      .map((m) => [`${m.provider}/${m.model}`, usageOf(m)]),
  );
  return { models, totals: usageOf(report.totals) };
}

describe.skipIf(corpus.length === 0 && process.env.CI !== "true")(
  "GET /api/agents/:agentId/transcripts/:sessionId/usage on the real corpus",
  () => {
    it("equals the sums over each session's JSONL, partial and missing usage included, hot and cold", async () => {
      const home = openStateHome({ home: tempDir() });
      const agent = home.agent("main");
      const want = new Map<string, Expected>();
      for (const file of corpus) {
        const sessionId = sessionIdOfFile(file.name);
        if (want.has(sessionId)) continue;
        const events = parseJsonl(file.text).flatMap((r) => (r.ok ? [r.event] : []));
        if (events.length === 0) continue;
        agent.transcripts.appendMany(sessionId, events, { verbatim: true });
        want.set(sessionId, sumLines(file.text));
      }
      const expected = [...want].map(([id, e]) => [id, { models: e.models, totals: e.totals }]);
      const hot = [];
      for (const [id] of want) hot.push([id, got(await usageOverHttp(home, id))]);
      expect(hot).toEqual(expected);

      for (const [id] of want) agent.cold.move(id);
      const cold = [];
      for (const [id] of want) {
        const report = await usageOverHttp(home, id);
        expect(report.cold).toBe(true);
        cold.push([id, got(report)]);
      }
      expect(cold).toEqual(expected);

      // Not a vacuous comparison: real usage, and some of it partial or missing.
      const all = [...want.values()];
      expect(all.reduce((n, e) => n + e.totals.messages, 0)).toBeGreaterThan(400);
      expect(all.reduce((n, e) => n + e.totals.inputTokens, 0)).toBeGreaterThan(0);
      expect(all.reduce((n, e) => n + e.incomplete, 0)).toBeGreaterThan(0);
      home.close();
    });
  },
);

describe("GET /api/agents/:agentId/transcripts/:sessionId/usage", () => {
  it("sums total tokens per model and says 404 for an unknown session", async () => {
    const home = openStateHome({ home: tempDir() });
    const usage = { input: 100, output: 20, cacheRead: 7, cacheWrite: 3, cost: { total: 0.5 } };
    home.transcripts.appendMany({ agentId: "main", sessionId: "s" }, [
      { type: "message", message: { role: "user", content: "hi" } },
      { type: "message", message: { role: "assistant", provider: "p", model: "m", usage } },
      { type: "message", message: { role: "assistant", provider: "p", model: "m" } },
    ]);
    const report = await usageOverHttp(home, "s");
    const model = report.models.find((m) => m.model === "m");
    expect(model).toMatchObject({ messages: 2, pricedMessages: 1, totalTokens: 130, cost: 0.5 });
    expect(report.totals.totalTokens).toBe(130);
    const { app, close } = createApp({ home });
    const missing = await app.request(`${ORIGIN}/api/agents/main/transcripts/nope/usage`);
    close();
    expect(missing.status).toBe(404);
    home.close();
  });
});

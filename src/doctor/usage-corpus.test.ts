import { cpSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { CORPUS_DIR, corpusHomes } from "../test-support/corpus.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { contributionOf, type OracleRow, roundCost } from "../test-support/usage-oracle.js";
import { runDoctorFix } from "./fix.js";
import { parseTranscriptFileName } from "./sources/transcript-source.js";

const tempDir = useTempDirs();
const homes = corpusHomes();

/** What the report compares: events aside (the import may add session headers). */
type Usage = Omit<OracleRow, "events" | "dayStartAt" | "provider" | "model">;

function usageOf(row: Usage): Usage {
  const { messages, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, cost } = row;
  return roundCost({
    messages,
    inputTokens,
    outputTokens,
    cacheReadTokens,
    cacheWriteTokens,
    cost,
    pricedMessages: row.pricedMessages,
  });
}

function addInto(sums: Map<string, Usage>, key: string, row: Usage): void {
  const sum = sums.get(key);
  if (sum === undefined) {
    sums.set(key, { ...row });
    return;
  }
  for (const field of Object.keys(row) as (keyof Usage)[]) sum[field] += row[field];
}

/**
 * Sums straight from the JSONL files, by `agent day provider/model`. A session's events are counted
 * once by id, however many of its files (live, reset, deleted) repeat them.
 */
function sumFiles(home: string, files: { agentId: string; path: string }[]): Map<string, Usage> {
  const sums = new Map<string, Usage>();
  const seen = new Set<string>();
  for (const file of files) {
    const sessionId = parseTranscriptFileName(file.path.split("/").at(-1) ?? "")?.sessionId;
    for (const line of readFileSync(join(home, file.path), "utf8").split("\n")) {
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      const id = `${file.agentId}/${sessionId}/${String(event.id)}`;
      if (seen.has(id)) continue;
      seen.add(id);
      const row = contributionOf(event, Date.parse(String(event.timestamp)));
      if (row.messages === 0) continue;
      const day = new Date(row.dayStartAt).toISOString().slice(0, 10);
      addInto(sums, `${file.agentId} ${day} ${row.provider}/${row.model}`, row);
    }
  }
  return new Map([...sums].map(([key, row]) => [key, usageOf(row)]));
}

describe.skipIf(homes.length === 0)("usage of the real corpus after doctor --fix", () => {
  it("equals the sums of the assistant messages' recorded usage in the JSONL files", async () => {
    let messages = 0;
    for (const source of homes) {
      const home = join(tempDir(), "home");
      cpSync(source, home, { recursive: true });
      const report = await runDoctorFix({ home, keepSources: true, backup: async () => "(test)" });
      const files = report.sources.filter(
        (s) => (s.kind === "transcript" || s.kind === "transcript-archive") && s.agentId,
      ) as { agentId: string; path: string; status: string }[];
      expect(files.every((f) => f.status === "imported")).toBe(true);
      const want = sumFiles(home, files);
      const state = openStateHome({ home, readonly: true });
      const got = new Map<string, Usage>();
      // Agents imported from other layouts (daycare history) have no JSONL transcript to sum.
      const agents = [...new Set(files.map((f) => f.agentId))];
      for (const agentId of agents) {
        const mine = [...want].filter(([key]) => key.startsWith(`${agentId} `));
        expect(state.usage.query({ agentId, by: "day" }).totals.inputTokens).toBe(
          mine.reduce((sum, [, row]) => sum + row.inputTokens, 0),
        );
        for (const row of state.agent(agentId).usage.byDay()) {
          if (row.messages === 0) continue;
          const day = new Date(row.dayStartAt).toISOString().slice(0, 10);
          addInto(got, `${agentId} ${day} ${row.provider}/${row.model}`, usageOf(row));
        }
      }
      expect(
        new Map([...got].map(([k, v]) => [k, usageOf(v)])),
        relative(CORPUS_DIR, source),
      ).toEqual(want);
      const total = [...want.values()].reduce((sum, row) => sum + row.cost, 0);
      expect(state.usage.query({ by: "model" }).totals.cost).toBeCloseTo(total, 9);
      messages += [...want.values()].reduce((sum, row) => sum + row.messages, 0);
      state.close();
    }
    // The corpus holds hundreds of assistant messages with usage: the comparison is not empty.
    expect(messages).toBeGreaterThan(400);
  });
});

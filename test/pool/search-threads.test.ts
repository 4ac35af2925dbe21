// With the built package a search across many agents spreads them over the search threads and the
// caller's thread. What it finds must be what the agents searched one by one find (the TypeScript
// sources here have no compiled thread: their searches run agent after agent), merged by the
// documented rule, written again here; a failure must be the one the first failing agent gives.
import { spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { markDamaged } from "../../src/db/damage-marker.js";
import { openStateHome, type StateHome } from "../../src/home.js";
import type { SearchHit } from "../../src/stores/agent/transcript-search.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";

const CHILD = fileURLToPath(new URL("./search-child.mjs", import.meta.url));
const tempDir = useTempDirs();
const AGENTS = 240;
const WORDS = ["deploy", "rollback", "plan", "invoice", "otter", "東京", "naïve", "lunch", "cache"];
const agentId = (i: number) => `agent-${String(i).padStart(4, "0")}`;
const QUERIES = [
  { query: "deploy", limit: 20 },
  { query: "rollback plan", limit: 500 },
  { query: "東京", limit: 7 },
  { query: "nothingmatches", limit: 20 },
  { query: "zephyr", limit: 20 },
];
/** Agents the child appends to, and keeps open, before it searches. */
const APPENDS = [
  { agentId: agentId(3), text: "deploy deploy rollback plan zephyr from the open agent" },
  {
    agentId: agentId(177),
    text: "東京 rollback plan otter zephyr, written just before the search",
  },
];

/** A few sessions per agent, of seeded words: hits, ranks and scores differ from agent to agent. */
function buildHome(dir: string): void {
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const home = openStateHome({ home: dir });
  for (let i = 0; i < AGENTS; i++) {
    for (let s = 0; s < 1 + (i % 3); s++) {
      home.transcripts.appendMany(
        { agentId: agentId(i), sessionId: `s${s}` },
        Array.from({ length: 5 + ((i * 7 + s) % 20) }, () => ({
          type: "message",
          message: {
            role: "user",
            content: Array.from(
              { length: 3 + Math.floor(next() * 12) },
              () => WORDS[Math.floor(next() * WORDS.length)],
            ).join(" "),
          },
        })),
      );
    }
  }
  home.close();
}

/** The oracle: each agent searched in turn, merged by the documented rule (docs/api.md). */
function searchedInTurn(home: StateHome, query: string, limit: number): SearchHit[] {
  const ranked = home
    .listAgents()
    .flatMap(({ agentId: id }) =>
      home
        .withAgent(id, (agent) => agent.search.search(query, { limit }))
        .map((hit, rank) => ({ hit, rank })),
    );
  ranked.sort(
    (a, b) =>
      a.rank - b.rank ||
      a.hit.score - b.hit.score ||
      (a.hit.agentId < b.hit.agentId ? -1 : a.hit.agentId > b.hit.agentId ? 1 : 0),
  );
  return ranked.slice(0, limit).map(({ hit }) => hit);
}

interface ChildResult {
  results: { hits?: SearchHit[]; error?: { name: string; code: string; message: string } }[];
  open: number;
  running: number;
  onThreads: number;
}

function runChild(home: string, appends: unknown[]): ChildResult {
  const child = spawnSync(
    process.execPath,
    [CHILD, home, JSON.stringify(QUERIES), JSON.stringify(appends)],
    { encoding: "utf8" },
  );
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout) as ChildResult;
}

describe("the search threads", () => {
  it("find across 240 agents what the agents searched one by one find, open agents' waiting events included", () => {
    requireBuild();
    const dir = tempDir();
    buildHome(dir);
    // Every agent opened writable once, so each index holds all its events (a writer closes with a
    // few waiting): bm25 sums its figures per segment, so an index caught up later could score the
    // same hit a last digit apart.
    const writer = openStateHome({ home: dir });
    for (const { agentId: id } of writer.listAgents()) writer.withAgent(id, () => undefined);
    writer.close();
    const child = runChild(dir, APPENDS);
    // The appended events are committed, still waiting for the index: the oracle, run afterwards
    // over read-only connections (which leave them waiting, as the search did), finds them too.
    const home = openStateHome({ home: dir, readonly: true });
    try {
      const expected = QUERIES.map(({ query, limit }) => searchedInTurn(home, query, limit));
      expect(child.results.map((result) => result.hits)).toEqual(expected);
      // The searches found something; the open agents' new events are the only zephyrs.
      expect(expected[1]?.length).toBeGreaterThan(100);
      const appended = expected[4] ?? [];
      expect(appended.map((hit) => [hit.agentId, hit.sessionId]).sort()).toEqual([
        [agentId(3), "open"],
        [agentId(177), "open"],
      ]);
    } finally {
      home.close();
    }
    // The pool held only the two agents appended to; the threads searched a share of the rest.
    expect(child.open).toBe(2);
    // Still running after the search, the threads did not keep the child from exiting.
    if (availableParallelism() > 1) {
      expect(child.onThreads).toBeGreaterThan(0);
      expect(child.running).toBeGreaterThan(0);
    } else expect(child.onThreads).toBe(0);
  });

  it("fail with the error of the first failing agent, as a search agent after agent does", () => {
    requireBuild();
    const dir = tempDir();
    buildHome(dir);
    const home = openStateHome({ home: dir });
    const paths = new Map(home.listAgents().map((agent) => [agent.agentId, agent.dbPath]));
    const pathOf = (i: number) => paths.get(agentId(i)) as string;
    markDamaged(pathOf(150), ["found damaged by the test"]);
    markDamaged(pathOf(201), ["found damaged by the test"]);
    let expected: unknown;
    try {
      home.transcripts.search("deploy");
    } catch (error) {
      const { name, code, message } = error as { name: string; code: string; message: string };
      expected = { name, code, message };
    } finally {
      home.close();
    }
    expect(expected).toMatchObject({ code: "E_DAMAGED" });
    expect((expected as { message: string }).message).toContain(pathOf(150));
    const child = runChild(dir, []);
    for (const result of child.results) expect(result.error).toEqual(expected);
  });
});

import { describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../home.js";
import type { SearchHit } from "../stores/agent/transcript-search.js";
import { descriptorsOn } from "../test-support/descriptors.js";
import { useTempDirs } from "../test-support/temp-dir.js";

const tempDir = useTempDirs();
const said = (content: string) => ({ type: "message", message: { role: "user", content } });

function seed(home: StateHome, agentId: string, hits: string[]): void {
  const filler = Array.from({ length: 5 }, (_, n) => said(`lunch menu ${n} soup bread`));
  home.transcripts.appendMany({ agentId, sessionId: "s" }, [...filler, ...hits.map(said)]);
}

describe("transcripts.search across agents", () => {
  it("merges by rank within each agent: every agent's best hit before any agent's second", () => {
    const home = openStateHome({ home: tempDir() });
    try {
      // Short, repetitive hits in one index and long, diluted ones in another: their bm25 scores
      // land in different ranges, though each agent ranks its own hits the same way.
      seed(home, "dense", ["deploy deploy deploy", "deploy deploy", "deploy now"]);
      const long = (n: number) =>
        `deploy ${"and then we talked about many unrelated things ".repeat(n)}`;
      seed(home, "diluted", [long(2), long(4), long(8)]);
      const perAgent = (agentId: string) =>
        home.transcripts.search("deploy", { agentId }).map((hit) => hit.seq);

      const merged = home.transcripts.search("deploy");
      expect(merged.map((hit) => hit.agentId)).toEqual([
        "dense",
        "diluted",
        "dense",
        "diluted",
        "dense",
        "diluted",
      ]);
      for (const agentId of ["dense", "diluted"]) {
        const own = merged.filter((hit) => hit.agentId === agentId).map((hit) => hit.seq);
        expect(own).toEqual(perAgent(agentId));
      }
      expect(home.transcripts.search("deploy", { limit: 3 }).map((hit) => hit.agentId)).toEqual([
        "dense",
        "diluted",
        "dense",
      ]);
    } finally {
      home.close();
    }
  });
});

const AGENTS = Array.from({ length: 7 }, (_, i) => `agent-${i}`);

/** Agents whose hits differ in number and length, so ranks and scores spread. */
function seedAgents(path: string): string[] {
  const home = openStateHome({ home: path });
  try {
    for (const [i, agentId] of AGENTS.entries()) {
      const hits = Array.from(
        { length: 1 + (i % 4) },
        (_, n) => `deploy ${"the plan ".repeat(i + n + 1)}`,
      );
      seed(home, agentId, hits);
    }
    return home.listAgents().map((agent) => agent.dbPath);
  } finally {
    home.close();
  }
}

/** The oracle: each agent searched in turn through the pool, merged here by the documented rule. */
function searchedInTurn(home: StateHome, query: string, limit: number): SearchHit[] {
  const ranked = home
    .listAgents()
    .flatMap(({ agentId }) =>
      home
        .withAgent(agentId, (agent) => agent.search.search(query, { limit }))
        .map((hit, rank) => ({ hit, rank })),
    );
  ranked.sort(
    (a, b) =>
      a.rank - b.rank || a.hit.score - b.hit.score || a.hit.agentId.localeCompare(b.hit.agentId),
  );
  return ranked.slice(0, limit).map(({ hit }) => hit);
}

/** Descriptors the process holds on any of the databases or their sidecars. */
function descriptorsOnAll(paths: readonly string[]): number {
  return paths
    .flatMap((path) => [path, `${path}-wal`, `${path}-shm`])
    .reduce((n, file) => n + descriptorsOn(file), 0);
}

describe("transcripts.search across agents, one read-only connection at a time", () => {
  it("finds the hits of each agent searched in turn through the pool, and leaves no agent open and no descriptor behind", () => {
    const path = tempDir();
    const paths = seedAgents(path);
    const before = openStateHome({ home: path });
    let expected: SearchHit[];
    try {
      // Through the writable pool: every agent's index is caught up afterwards.
      expected = searchedInTurn(before, "deploy plan", 12);
    } finally {
      before.close();
    }
    const home = openStateHome({ home: path, maxOpenAgents: 2 });
    try {
      const found = home.transcripts.search("deploy plan", { limit: 12 });
      expect(found).toEqual(expected);
      expect(new Set(found.map((hit) => hit.agentId)).size).toBe(AGENTS.length);
      expect(home.agentPool).toMatchObject({ open: 0, opened: 0, evicted: 0 });
      expect(descriptorsOnAll(paths)).toBe(0);
    } finally {
      home.close();
    }
  });

  it("finds events appended after the index's watermark, as a read-only pool does", () => {
    const path = tempDir();
    const paths = seedAgents(path);
    // Not indexed yet: appends leave a short backlog for the next search to take in.
    const writer = openStateHome({ home: path });
    try {
      writer.transcripts.append({ agentId: "agent-3", sessionId: "s" }, said("deploy plan late"));
    } finally {
      writer.close();
    }
    const reader = openStateHome({ home: path, readonly: true, maxOpenAgents: 1 });
    let expected: SearchHit[];
    try {
      expected = searchedInTurn(reader, "late deploy", 5);
    } finally {
      reader.close();
    }
    expect(expected.map((hit) => hit.snippet).join()).toContain("late");
    const home = openStateHome({ home: path, maxOpenAgents: 2 });
    try {
      expect(home.transcripts.search("late deploy", { limit: 5 })).toEqual(expected);
      expect(home.agentPool).toMatchObject({ open: 0, opened: 0 });
      expect(descriptorsOnAll(paths)).toBe(0);
    } finally {
      home.close();
    }
  });

  it("searches an agent the pool has open through its open state, leaving the pool's order as it was", () => {
    const path = tempDir();
    seedAgents(path);
    const home = openStateHome({ home: path, maxOpenAgents: 3 });
    try {
      for (const agentId of ["agent-5", "agent-1", "agent-4"]) home.agent(agentId);
      const opened = home.agentPool.opened;
      const hits = home.transcripts.search("deploy", { limit: 50 });
      expect(new Set(hits.map((hit) => hit.agentId)).size).toBe(AGENTS.length);
      expect(home.agentPool).toMatchObject({ open: 3, opened, evicted: 0 });
      // A fourth agent evicts the least recently used one, still agent-5: the other two stay open.
      for (const agentId of ["agent-0", "agent-1", "agent-4"]) home.agent(agentId);
      expect(home.agentPool.opened).toBe(opened + 1);
    } finally {
      home.close();
    }
  });
});

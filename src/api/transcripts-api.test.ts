import { describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../home.js";
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

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";

const tempDir = useTempDirs();

function setup() {
  const home = openStateHome({ home: tempDir() });
  const agent = home.agent("main");
  const add = (sessionId: string, role: string, content: unknown, extra: object = {}) =>
    agent.transcripts.append(sessionId, { type: "message", message: { role, content, ...extra } });
  return { home, agent, add };
}

describe("TranscriptSearch", () => {
  it("finds user, assistant and tool-result text and compaction summaries, ranked, with snippets", () => {
    const { home, agent, add } = setup();
    add("s1", "user", [{ type: "text", text: "Please water the basil tomorrow morning" }]);
    add("s1", "assistant", [
      { type: "thinking", thinking: "secret basil reasoning" },
      { type: "text", text: "Reminder set." },
      { type: "toolCall", id: "t1", name: "reminders_add", arguments: { text: "basil" } },
    ]);
    add("s1", "toolResult", [{ type: "text", text: "Created reminder: water basil basil basil" }], {
      toolCallId: "t1",
    });
    agent.transcripts.append("s2", {
      type: "compaction",
      summary: "The user grows basil and tomatoes.",
    });

    const hits = agent.search.search("basil");
    // The tool result says "basil" most often, so bm25 ranks it first.
    expect(hits[0]?.role).toBe("toolResult");
    expect(hits.map((h) => h.role ?? h.eventType).sort()).toEqual([
      "compaction",
      "toolResult",
      "user",
    ]);
    expect(hits.map((h) => h.score)).toEqual(hits.map((h) => h.score).sort((a, b) => a - b));
    const user = hits.find((h) => h.role === "user");
    expect(user?.snippet).toContain("basil");
    const [from, to] = user?.highlights[0] ?? [0, 0];
    expect(user?.snippet.slice(from, to)).toBe("basil");
    expect(agent.search.search("reasoning")).toEqual([]);
    expect(agent.search.search("reminders_add")).toHaveLength(1);
    expect(agent.search.search("basil", { sessionId: "s2" }).map((h) => h.eventType)).toEqual([
      "compaction",
    ]);
    expect(agent.search.search("water basil", { limit: 1 })).toHaveLength(1);
    home.close();
  });

  it("folds case and diacritics and requires every word", () => {
    const { home, agent, add } = setup();
    add("s", "user", "Crème brûlée at the Café");
    add("s", "user", "cafe opening hours");
    expect(agent.search.search("CREME Brulee")).toHaveLength(1);
    expect(agent.search.search("café")).toHaveLength(2);
    expect(agent.search.search("cafe hours")).toHaveLength(1);
    home.close();
  });

  it("takes any user string without an error", () => {
    const { home, agent, add } = setup();
    add("s", "user", 'quotes " and AND OR NOT NEAR(a b) * ^ col:x {y} 🌿 日本語');
    const hostile = [
      '"',
      '""',
      "AND",
      "OR NOT",
      "NEAR(",
      "*",
      "^x",
      "col:x",
      "text:basil",
      "-",
      "()",
      "",
      "   ",
      "\u0000",
      "🌿",
      "日本語",
      "'; DROP TABLE transcript_events; --",
    ];
    for (const query of hostile) expect(() => agent.search.search(query), query).not.toThrow();
    expect(agent.search.search("日本語")).toHaveLength(1);
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }), (query) => {
        agent.search.search(query);
      }),
      { numRuns: 300 },
    );
    expect(agent.db.prepare("SELECT count(*) AS n FROM transcript_events").get()).toEqual({ n: 2 });
    home.close();
  });
});

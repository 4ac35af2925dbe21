import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../../home.js";
import { corpusTranscripts } from "../../test-support/corpus.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { parseJsonl } from "../../transcript/jsonl-codec.js";
import { searchableText } from "../../transcript/search-text.js";

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
    // The assistant's hit is the argument value of its tool call.
    expect(hits.map((h) => h.role ?? h.eventType).sort()).toEqual([
      "assistant",
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

  it("finds a word inside a run of Chinese, Japanese or Korean characters", () => {
    const { home, agent, add } = setup();
    const texts = [
      "支持的通道列表",
      "第三季度销售数据",
      "東京の天気は？",
      "用中文回复我",
      "서울 날씨가 좋네요",
    ];
    for (const text of texts) add("s", "user", text);
    const found = (query: string) =>
      agent.search.search(query).map((hit) => texts[hit.seq - 2] ?? `seq ${hit.seq}`);
    expect(found("支持")).toEqual(["支持的通道列表"]);
    expect(found("销售数据")).toEqual(["第三季度销售数据"]);
    expect(found("東京")).toEqual(["東京の天気は？"]);
    expect(found("天気")).toEqual(["東京の天気は？"]);
    expect(found("中文")).toEqual(["用中文回复我"]);
    expect(found("날씨")).toEqual(["서울 날씨가 좋네요"]);
    // Order and adjacency count: the characters of 销售数据 in another order are not a match.
    expect(found("数据销售")).toEqual([]);
    expect(found("季销")).toEqual([]);
    // One character finds every text holding it, wherever it sits in its run.
    expect(found("表").sort()).toEqual(["支持的通道列表"]);
    expect(found("我")).toEqual(["用中文回复我"]);
    const hit = agent.search.search("销售数据")[0];
    const [from, to] = hit?.highlights[0] ?? [0, 0];
    expect(hit?.snippet.slice(from, to)).toBe("销售数据");
    home.close();
  });

  it("requires every word of a query mixing CJK and latin words", () => {
    const { home, agent, add } = setup();
    add("s", "user", "请把 deploy 日志发给我");
    add("s", "user", "deploy finished");
    add("s", "user", "日志在哪里");
    expect(agent.search.search("deploy 日志")).toHaveLength(1);
    expect(agent.search.search("deploy日志")).toHaveLength(1);
    expect(agent.search.search("DEPLOY")).toHaveLength(2);
    const hit = agent.search.search("日志 deploy")[0];
    expect(hit?.highlights.map(([from, to]) => hit.snippet.slice(from, to))).toEqual([
      "deploy",
      "日志",
    ]);
    home.close();
  });

  it("finds words by a prefix ending in *", () => {
    const { home, agent, add } = setup();
    add("s", "user", "deployment failed");
    add("s", "user", "deploy again");
    add("s", "user", "de novo");
    expect(agent.search.search("deplo*")).toHaveLength(2);
    expect(agent.search.search("deplo")).toEqual([]);
    expect(agent.search.search("deploy*")).toHaveLength(2);
    const hit = agent.search.search("deplo*").find((h) => h.snippet.startsWith("deployment"));
    expect(hit?.highlights).toEqual([[0, "deployment".length]]);
    home.close();
  });

  it("gives the best hits for any limit, in turn, in one session or all", () => {
    const { home, agent, add } = setup();
    // Event k says "basil" k times among 30 words: every score differs.
    for (let k = 1; k <= 30; k++) {
      const words = Array.from({ length: 30 }, (_, i) => (i < k ? "basil" : `filler${i}`));
      add(k % 2 === 0 ? "even" : "odd", "user", words.join(" "));
    }
    // While the events wait for the index (matched in JS), and once they are indexed (by SQL).
    for (const indexed of [false, true]) {
      if (indexed) agent.transcripts.index.indexPending();
      // Waiting: the 30 messages and the headers of their 2 sessions.
      expect(agent.transcripts.index.unindexed()).toBe(indexed ? 0 : 32);
      const best = agent.search.search("basil", { limit: 500 }).map((h) => [h.sessionId, h.seq]);
      expect(best).toHaveLength(30);
      const odd = agent.search
        .search("basil", { sessionId: "odd", limit: 500 })
        .map((h) => [h.sessionId, h.seq]);
      expect(odd).toEqual(best.filter(([sessionId]) => sessionId === "odd"));
      // More limits than the store keeps statements for, some asked again after the others.
      for (const limit of [1, 2, 3, 5, 8, 13, 21, 2, 1, 30]) {
        const hits = agent.search.search("basil", { limit });
        expect(hits.map((h) => [h.sessionId, h.seq])).toEqual(best.slice(0, limit));
        const inOdd = agent.search.search("basil", { sessionId: "odd", limit });
        expect(inOdd.map((h) => [h.sessionId, h.seq])).toEqual(odd.slice(0, limit));
      }
    }
    home.close();
  });

  it("finds an assistant's error message and the argument values of its tool calls", () => {
    const { home, agent, add } = setup();
    add("s", "assistant", [], { errorMessage: "429 rate_limit_error: quota exhausted" });
    add("s", "assistant", [
      { type: "toolCall", id: "t1", name: "exec", arguments: { command: "grep -rn foo src/" } },
    ]);
    add("s", "assistant", [
      { type: "tool_use", id: "t2", name: "read", input: { path: "/etc/hosts", lines: [120] } },
    ]);
    expect(agent.search.search("quota exhausted").map((h) => h.seq)).toEqual([2]);
    expect(agent.search.search("grep foo").map((h) => h.seq)).toEqual([3]);
    expect(agent.search.search("hosts 120").map((h) => h.seq)).toEqual([4]);
    // Keys are not indexed: only what the tool was given.
    expect(agent.search.search("command")).toEqual([]);
    const hit = agent.search.search("foo")[0];
    const [from, to] = hit?.highlights[0] ?? [0, 0];
    expect(hit?.snippet.slice(from, to)).toBe("foo");
    home.close();
  });

  it("indexes a whole batch in the transaction that appends it, every event under its own word", () => {
    const { home, agent, add } = setup();
    // Batches at the limit and past it, appended with nothing waiting before them (the bulk
    // step then takes the batch's texts from memory) and with events waiting (it reads those).
    const word = (n: number) => `w${n.toString(36)}q`;
    const batches = [100, 64, 300];
    let n = 0;
    const ids = new Map<string, string>();
    for (const [b, size] of batches.entries()) {
      if (b === 2) add("s", "user", "a few words waiting");
      const events = Array.from({ length: size }, () => ({
        type: "message",
        message: { role: "user", content: `note ${word(n++)}` },
      }));
      const results = agent.transcripts.appendMany(`batch-${b}`, events);
      for (const [i, r] of results.entries()) {
        ids.set(String(events[i]?.message.content), r.event.id);
      }
      expect(agent.transcripts.index.unindexed(), `batch ${b}`).toBe(0);
    }
    expect(ids.size).toBe(n);
    for (const [text, id] of ids) {
      const hits = agent.search.search(text.slice("note ".length));
      expect(
        hits.map((hit) => hit.eventId),
        text,
      ).toEqual([id]);
    }
    // Nothing was indexed twice: one index row per event with text.
    const rows = agent.db.prepare<{ n: number }>("SELECT count(*) AS n FROM transcript_fts").get();
    expect(rows?.n).toBe(n + 1);
    home.close();
  });

  it("indexes single appends in bulk as they stand, after deletes here and writes by another connection", () => {
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    const other = openStateHome({ home: dir });
    const agent = home.agent("main");
    const live = new Map<string, string>(); // word -> the event id it must find
    const dead = new Set<string>(); // words of deleted events: found nowhere
    let n = 0;
    const say = (target: typeof agent, sessionId: string) => {
      const word = `z${(n++).toString(36)}k`;
      const event = { type: "message", message: { role: "user", content: `say ${word}` } };
      live.set(word, target.transcripts.append(sessionId, event).event.id);
      return word;
    };
    const drop = (target: typeof agent, sessionId: string, words: string[]) => {
      target.lifecycle.delete(sessionId);
      for (const word of words) {
        live.delete(word);
        dead.add(word);
      }
    };
    const check = (step: string, index = true) => {
      // Nothing waits after the bulk step of the last append, or only what came after it.
      for (const [word, id] of live) {
        expect(
          agent.search.search(word).map((hit) => hit.eventId),
          `${step}: ${word}`,
        ).toEqual([id]);
      }
      for (const word of dead) expect(agent.search.search(word), `${step}: ${word}`).toEqual([]);
      if (!index) return;
      const count = (sql: string) => agent.db.prepare<{ n: number }>(sql).get()?.n;
      agent.transcripts.index.indexPending();
      // One index row per stored event with text (the headers have none), none for a deleted one.
      expect(count("SELECT count(*) AS n FROM transcript_fts"), step).toBe(
        count("SELECT count(*) AS n FROM transcript_events WHERE event_type <> 'session'"),
      );
    };
    const many = (count: number, sessionId: string) =>
      Array.from({ length: count }, () => say(agent, sessionId));
    // The newest rows deleted here, their ids taken again by the next appends.
    many(70, "a");
    const top = many(10, "b");
    drop(agent, "b", top);
    many(70, "c");
    check("top rows deleted here");
    // Rows in the middle deleted here: the table no longer holds every id above the mark.
    const middle = many(10, "d");
    many(10, "e");
    drop(agent, "d", middle);
    many(60, "e");
    check("middle rows deleted here");
    // Another connection deletes this writer's newest rows and takes their ids: a search while
    // they wait, then the bulk step.
    for (const [from, to] of [
      ["f", "g"],
      ["i", "j"],
    ] as const) {
      const mine = many(10, from);
      drop(other.agent("main"), from, mine);
      for (let i = 0; i < 10; i++) say(other.agent("main"), to);
      if (from === "f") check("another connection's events waiting", false);
      else many(60, "h");
    }
    check("ids taken by another connection");
    other.close();
    home.close();
  });

  it("finds exactly the events of a real Chinese session that contain a word", () => {
    const file = corpusTranscripts().find((f) => f.name.includes("76cc5ab5-0425-4038"));
    if (file === undefined) return; // the corpus is absent (corpusTranscripts throws under CI)
    const { home, agent } = setup();
    const events = parseJsonl(file.text).flatMap((line) => (line.ok ? [line.event] : []));
    agent.transcripts.appendMany("real", events, { verbatim: true, ensureHeader: false });
    for (const word of ["仓库", "密钥", "服务器", "飞书"]) {
      const expected = events
        .filter((event) => searchableText(event).includes(word))
        .map((event) => event.id)
        .sort();
      expect(expected.length, word).toBeGreaterThan(0);
      const hits = agent.search.search(word, { limit: 500 });
      expect(hits.map((hit) => hit.eventId).sort(), word).toEqual(expected);
      for (const hit of hits) {
        const marked = hit.highlights.map(([from, to]) => hit.snippet.slice(from, to));
        expect(marked, word).toContain(word);
      }
    }
    home.close();
  });

  it("scores the events still above the watermark as FTS5's bm25 does once they are indexed, on a writer and a read-only connection", () => {
    const words = ["basil", "Basil", "tomato", "café", "cafe", "naïve", "deploy", "deployment"];
    const cjk = ["東京の天気", "支持的通道列表", "東京", "销售数据"];
    const text = fc
      .array(fc.oneof(fc.constantFrom(...words), fc.constantFrom(...cjk)), {
        minLength: 0,
        maxLength: 12,
      })
      .map((parts) => parts.join(" "));
    const queries = [
      "basil",
      "cafe",
      "tomato basil",
      "deplo*",
      "東京",
      "支持",
      "naive",
      "天気 basil",
    ];
    let compared = 0;
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 64, maxLength: 120 }),
        fc.array(text, { minLength: 1, maxLength: 40 }),
        fc.constantFrom(...queries),
        (indexed, pending, query) => {
          const dir = tempDir();
          const home = openStateHome({ home: dir });
          const agent = home.agent("main");
          const message = (t: string) => ({
            type: "message",
            message: { role: "user", content: [{ type: "text", text: t }] },
          });
          agent.transcripts.appendMany("old", indexed.map(message));
          agent.transcripts.index.indexPending();
          const fresh = new Set(
            pending.map((t) => agent.transcripts.append("new", message(t)).event.id),
          );
          // Still above the watermark: the search matched them itself.
          expect(agent.transcripts.index.unindexed()).toBeGreaterThan(0);
          const before = agent.search.search(query, { limit: 500 });
          // A read-only connection holds none of their texts: it reads and matches their rows.
          const reader = openStateHome({ home: dir, readonly: true });
          const read = reader.agent("main").search.search(query, { limit: 500 });
          reader.close();
          agent.transcripts.index.indexPending();
          expect(agent.transcripts.index.unindexed()).toBe(0);
          const after = agent.search.search(query, { limit: 500 });
          const ids = (hits: typeof before) => hits.map((hit) => hit.eventId).sort();
          expect(ids(before)).toEqual(ids(after));
          expect(ids(read)).toEqual(ids(after));
          const scored = new Map(after.map((hit) => [hit.eventId, hit.score]));
          for (const hit of [...before, ...read].filter((h) => fresh.has(h.eventId))) {
            expect(hit.score).toBeCloseTo(scored.get(hit.eventId) ?? Number.NaN, 9);
            compared++;
          }
          home.close();
        },
      ),
      { numRuns: 40 },
    );
    expect(compared).toBeGreaterThan(20);
  });

  it("finds waiting events of another writer too, beside its own, as it finds them once indexed", () => {
    const dir = tempDir();
    const first = openStateHome({ home: dir });
    const second = openStateHome({ home: dir });
    const reader = openStateHome({ home: dir, readonly: true });
    try {
      const message = (text: string) => ({
        type: "message",
        message: { role: "user", content: [{ type: "text", text }] },
      });
      const a = first.agent("main");
      const b = second.agent("main");
      a.transcripts.appendMany(
        "old",
        Array.from({ length: 70 }, (_, i) => message(`filler ${i} basil`)),
      );
      a.transcripts.index.indexPending();
      const mine = a.transcripts.append("a", message("basil from the first writer")).event.id;
      const theirs = b.transcripts.append("b", message("basil from the second writer")).event.id;
      a.transcripts.append("a", message("tomato only"));
      // Waiting, with the two new sessions' headers: few enough to be matched, not indexed.
      expect(a.transcripts.index.unindexed()).toBe(5);
      const ids = (hits: { eventId: string }[]) => hits.map((hit) => hit.eventId).sort();
      const waiting = a.search.search("basil writer", { limit: 500 });
      const fromReader = reader.agent("main").search.search("basil writer", { limit: 500 });
      expect(ids(waiting)).toEqual([mine, theirs].sort());
      expect(ids(fromReader)).toEqual(ids(waiting));
      a.transcripts.index.indexPending();
      const indexed = a.search.search("basil writer", { limit: 500 });
      expect(ids(indexed)).toEqual(ids(waiting));
      const scored = new Map(indexed.map((hit) => [hit.eventId, hit.score]));
      for (const hit of waiting) expect(hit.score).toBeCloseTo(scored.get(hit.eventId) ?? 0, 9);
    } finally {
      reader.close();
      second.close();
      first.close();
    }
  });
});

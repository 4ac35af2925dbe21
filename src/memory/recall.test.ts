import { describe, expect, it } from "vitest";
import { renderRecall, selectRecalled } from "./recall.js";
import type { Fact, Topic } from "./types.js";

function fact(key: string, fields: Partial<Fact> = {}): Fact {
  return {
    factId: key,
    scope: "user",
    key,
    category: "project",
    value: `${key} value`,
    reference: null,
    sensitivity: "normal",
    recallPolicy: "on_demand",
    confidence: 1,
    source: null,
    sourceTopicId: null,
    tags: [],
    version: 1,
    createdAt: 0,
    updatedAt: 0,
    ...fields,
  };
}

const topic: Topic = {
  topicId: "t",
  sessionId: "s",
  title: "Deploy\npipeline",
  status: "paused",
  parentTopicId: null,
  summaryShort: "Runner chosen",
  summaryLong: "",
  openLoops: ["wire secrets", "test\nrollback"],
  labels: ["infra"],
  createdAt: 0,
  updatedAt: 0,
  lastActiveAt: 0,
};

describe("selectRecalled", () => {
  it("orders always, topic, query; takes each fact once; drops sensitive unless asked", () => {
    const shared = fact("shared", { category: "decision" });
    const candidates = {
      always: [fact("b", { category: "project" }), fact("a", { category: "background" })],
      topic: [shared, fact("secret", { sensitivity: "sensitive" })],
      query: [shared, fact("q")],
    };
    const picked = selectRecalled(candidates, { includeSensitive: false });
    expect(picked.map((f) => [f.key, f.reason])).toEqual([
      ["a", "always"],
      ["b", "always"],
      ["shared", "topic"],
      ["q", "query"],
    ]);
    const all = selectRecalled(candidates, { includeSensitive: true });
    expect(all.map((f) => f.key)).toContain("secret");
  });

  it("strips any value from a secret_ref, whatever it was handed", () => {
    const leaked = fact("api", {
      sensitivity: "secret_ref",
      value: "sk-leak",
      reference: "env:API",
    });
    const [out] = selectRecalled(
      { always: [leaked], topic: [], query: [] },
      { includeSensitive: true },
    );
    expect(out).toMatchObject({ value: null, reference: "env:API" });
  });
});

describe("renderRecall", () => {
  it("renders a line-oriented block in which no value can start a line of its own", () => {
    const facts = selectRecalled(
      {
        always: [
          fact("editor", { category: "preference", value: "vim\n- [security] fake: injected" }),
          fact("api", { category: "account", sensitivity: "secret_ref", reference: "env:API" }),
          fact("raw", { category: "account", sensitivity: "secret_ref", reference: null }),
        ],
        topic: [],
        query: [],
      },
      { includeSensitive: false },
    );
    expect(renderRecall(topic, facts)).toBe(
      [
        "## Topic: Deploy pipeline (paused)",
        "Summary: Runner chosen",
        "Open loops:",
        "- wire secrets",
        "- test rollback",
        "Labels: infra",
        "",
        "## Facts",
        "- [account] api: secret kept at env:API (reference only; the value is not inlined)",
        "- [account] raw: secret (reference withheld: the stored value is not a reference)",
        "- [preference] editor: vim - [security] fake: injected",
      ].join("\n"),
    );
    expect(renderRecall(null, [])).toBe("");
  });
});

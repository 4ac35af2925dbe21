import { describe, expect, it } from "vitest";
import { importGroups } from "./import-groups.js";
import type { PlannedSource } from "./plan.js";

function source(
  path: string,
  kind: PlannedSource["kind"],
  agentId: string | null,
  bytes = 1000,
  action: PlannedSource["action"] = "import",
): PlannedSource {
  return {
    kind,
    path,
    agentId,
    bytes,
    mtimeMs: 0,
    refused: null,
    absPath: `/home/${path}`,
    targetTable: null,
    sha256: null,
    sourceKey: path,
    records: 1,
    problems: [],
    problemCount: 0,
    notes: [],
    action,
    reason: null,
  };
}

/** The groups as lists of plan indexes. */
function indexes(sources: PlannedSource[]): number[][] {
  return importGroups(sources).map((group) => group.map((s) => s.index));
}

describe("importGroups", () => {
  it("groups consecutive short transcripts of one agent and keeps every other source alone", () => {
    const plan = [
      source("agents/a/sessions/sessions.json", "session-index", "a"),
      source("agents/a/sessions/1.jsonl.deleted.x", "transcript-archive", "a"),
      source("agents/a/sessions/1.jsonl", "transcript", "a"),
      source("agents/a/sessions/2.jsonl", "transcript", "a"),
      source("agents/b/sessions/3.jsonl", "transcript", "b"),
      source("agents/b/sessions/4.jsonl", "transcript", "b"),
      source("cron/jobs.json", "cron-jobs", null),
    ];
    expect(indexes(plan)).toEqual([[0], [1, 2, 3], [4, 5], [6]]);
  });

  it("skips sources that are not imported, without breaking a group", () => {
    const plan = [
      source("agents/a/sessions/1.jsonl", "transcript", "a"),
      source("agents/a/sessions/2.jsonl", "transcript", "a", 1000, "skip"),
      source("agents/a/sessions/3.jsonl", "transcript", "a"),
    ];
    expect(indexes(plan)).toEqual([[0, 2]]);
  });

  it("imports a long transcript alone and cuts groups by count and by size", () => {
    const long = [
      source("agents/a/sessions/0.jsonl", "transcript", "a"),
      source("agents/a/sessions/big.jsonl", "transcript", "a", 10 * 1024 * 1024),
      source("agents/a/sessions/1.jsonl", "transcript", "a"),
    ];
    expect(indexes(long)).toEqual([[0], [1], [2]]);

    const many = Array.from({ length: 130 }, (_, i) =>
      source(`agents/a/sessions/${i}.jsonl`, "transcript", "a"),
    );
    expect(importGroups(many).map((g) => g.length)).toEqual([64, 64, 2]);

    const heavy = Array.from({ length: 40 }, (_, i) =>
      source(`agents/a/sessions/${i}.jsonl`, "transcript", "a", 200 * 1024),
    );
    const sizes = importGroups(heavy).map((g) => g.reduce((n, s) => n + s.source.bytes, 0));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(
      importGroups(heavy)
        .flat()
        .map((s) => s.index),
    ).toEqual(heavy.map((_, i) => i));
  });
});

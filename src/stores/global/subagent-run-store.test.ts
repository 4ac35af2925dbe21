import { describe, expect, it } from "vitest";
import { SubagentRunStore } from "./subagent-run-store.js";
import { expectStateError, simulatedClock, useGlobalDb } from "./test-support/global-db.js";

const openDb = useGlobalDb();

function store() {
  const clock = simulatedClock();
  return { clock, runs: new SubagentRunStore(openDb(), { clock: clock.now }) };
}

/** A run record in the registry's shape (subagents registry, version 2). */
function record(runId: string, extra = {}) {
  return {
    runId,
    childSessionKey: `agent:main:subagent:${runId}`,
    controllerSessionKey: "agent:main:main",
    requesterSessionKey: "agent:main:main",
    requesterDisplayKey: "main",
    requesterOrigin: { channel: "discord", to: "channel:1" },
    task: "Research the topic and report back",
    cleanup: "keep",
    expectsCompletionMessage: true,
    spawnMode: "run",
    model: "anthropic/claude",
    createdAt: 1_770_000_000_000,
    startedAt: 1_770_000_000_100,
    frozenResultText: null,
    ...extra,
  };
}

describe("SubagentRunStore", () => {
  it("keeps the record verbatim and indexes its session keys", () => {
    const { runs } = store();
    const run = runs.upsert(record("r1"));
    expect(run).toMatchObject({
      runId: "r1",
      childSessionKey: "agent:main:subagent:r1",
      requesterSessionKey: "agent:main:main",
      controllerSessionKey: "agent:main:main",
      createdAt: 1_770_000_000_000,
      endedAt: null,
      cleanupHandled: false,
    });
    expect(run.record).toEqual(record("r1"));
    runs.upsert(
      record("r2", { requesterSessionKey: "agent:main:other", createdAt: 1_770_000_000_001 }),
    );
    expect(runs.listBySession("child", "agent:main:subagent:r2").map((r) => r.runId)).toEqual([
      "r2",
    ]);
    expect(runs.listBySession("requester", "agent:main:main").map((r) => r.runId)).toEqual(["r1"]);
    expect(runs.listBySession("controller", "agent:main:main").map((r) => r.runId)).toEqual([
      "r1",
      "r2",
    ]);
    expect(() => runs.listBySession("toString" as never, "x")).toThrow(/Expected a role/);
  });

  it("lists unfinished runs and ended runs awaiting cleanup, for recovery after a restart", () => {
    const { runs, clock } = store();
    runs.upsert(record("running"));
    runs.upsert(record("ended", { endedAt: 1_770_000_009_000, outcome: { status: "ok" } }));
    runs.upsert(record("cleaned", { endedAt: 1_770_000_009_000, cleanupHandled: true }));
    expect(runs.listUnfinished().map((r) => r.runId)).toEqual(["running"]);
    expect(runs.listPendingCleanup().map((r) => r.runId)).toEqual(["ended"]);
    const ended = runs.end("running", {
      outcome: { status: "timeout" },
      endedReason: "subagent-error",
    });
    expect(ended).toMatchObject({
      endedAt: clock.now(),
      record: { outcome: { status: "timeout" }, endedReason: "subagent-error" },
    });
    expect(runs.listUnfinished()).toEqual([]);
    expect(runs.listPendingCleanup().map((r) => r.runId)).toEqual(["ended", "running"]);
    expect(runs.markCleanupHandled("ended").cleanupHandled).toBe(true);
    expect(runs.listPendingCleanup().map((r) => r.runId)).toEqual(["running"]);
  });

  it("updates by merge or function, and refuses to rename a run", () => {
    const { runs } = store();
    runs.upsert(record("r"));
    expect(runs.update("r", { label: "deep dive" }).record.label).toBe("deep dive");
    expect(
      runs.update("r", (current) => ({ ...current, announceRetryCount: 2 })).record,
    ).toMatchObject({
      label: "deep dive",
      announceRetryCount: 2,
    });
    expectStateError(
      () => runs.update("r", { runId: "other" }),
      "E_INVALID_ARGUMENT",
      /cannot change its runId/,
    );
    expectStateError(() => runs.update("missing", {}), "E_NOT_FOUND");
    expect(runs.delete("r")).toBe(true);
    expect(runs.get("r")).toBeUndefined();
  });

  it("breaks ties in both worklists by run id, whatever order the runs were written in", () => {
    const { runs } = store();
    for (const id of ["c", "a", "b"]) runs.upsert(record(id));
    for (const id of ["z", "x", "y"]) runs.upsert(record(id, { endedAt: 1_770_000_009_000 }));
    expect(runs.listUnfinished().map((r) => r.runId)).toEqual(["a", "b", "c"]);
    expect(runs.listPendingCleanup().map((r) => r.runId)).toEqual(["x", "y", "z"]);
  });
});

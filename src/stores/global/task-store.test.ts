import { describe, expect, it } from "vitest";
import { FlowStore } from "./flow-store.js";
import {
  FLOW_STATUSES,
  FLOW_TRANSITIONS,
  TASK_STATUSES,
  TASK_TRANSITIONS,
  type TaskStatus,
} from "./task-states.js";
import { TaskStore } from "./task-store.js";
import {
  expectStateError,
  rowCount,
  simulatedClock,
  useGlobalDb,
} from "./test-support/global-db.js";

const openDb = useGlobalDb();

function stores() {
  const clock = simulatedClock();
  const db = openDb();
  return {
    db,
    clock,
    tasks: new TaskStore(db, { clock: clock.now }),
    flows: new FlowStore(db, { clock: clock.now }),
  };
}

describe("TaskStore", () => {
  it("creates tasks and moves them through their lifecycle, stamping start and end", () => {
    const { tasks, clock } = stores();
    const created = tasks.create({
      taskId: "t1",
      runtime: "subagent",
      agentId: "main",
      requesterSessionKey: "agent:main:main",
      childSessionKey: "agent:main:subagent:1",
      label: "research",
      record: { task: "Find three papers", notifyPolicy: "done_only" },
    });
    expect(created).toMatchObject({
      status: "queued",
      startedAt: null,
      endedAt: null,
      createdAt: clock.now(),
    });
    const started = clock.advance(1000);
    expect(
      tasks.transition("t1", "running", { record: { progressSummary: "searching" } }),
    ).toMatchObject({
      status: "running",
      startedAt: started,
      record: {
        task: "Find three papers",
        notifyPolicy: "done_only",
        progressSummary: "searching",
      },
    });
    const ended = clock.advance(5000);
    expect(tasks.transition("t1", "failed", { error: "rate limited" })).toMatchObject({
      status: "failed",
      startedAt: started,
      endedAt: ended,
      error: "rate limited",
    });
    expectStateError(
      () => tasks.transition("t1", "running"),
      "E_CONFLICT",
      /cannot go from failed to running; allowed: none/,
    );
    expectStateError(() => tasks.create({ taskId: "t1", runtime: "cli" }), "E_CONFLICT");
    expectStateError(() => tasks.transition("missing", "running"), "E_NOT_FOUND");
    expectStateError(
      () => tasks.transition("t1", "done" as TaskStatus),
      "E_INVALID_ARGUMENT",
      /task status must be one of/,
    );
    expect(() => tasks.create({ runtime: "cli", priority: 1 } as never)).toThrow(
      /Unknown option.*priority/,
    );
    expect(tasks.create({ runtime: "cli" }).taskId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("allows exactly the transitions in TASK_TRANSITIONS", () => {
    const { tasks } = stores();
    let n = 0;
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        const id = `t${n++}`;
        tasks.create({ taskId: id, runtime: "cron", status: from });
        const allowed = TASK_TRANSITIONS[from].includes(to);
        if (allowed) expect(tasks.transition(id, to).status, `${from} → ${to}`).toBe(to);
        else expectStateError(() => tasks.transition(id, to), "E_CONFLICT");
        expect(tasks.get(id)?.status).toBe(allowed ? to : from);
      }
    }
    expect(TASK_TRANSITIONS.queued).toContain("running");
    expect(TASK_TRANSITIONS.running).not.toContain("queued");
  });

  it("transitions compare-and-swap on the expected status", () => {
    const { tasks } = stores();
    tasks.create({ taskId: "t", runtime: "acp" });
    expectStateError(
      () => tasks.transition("t", "succeeded", { expected: "running" }),
      "E_CONFLICT",
      /is queued, expected running/,
    );
    expect(tasks.transition("t", "running", { expected: "queued" }).status).toBe("running");
  });

  it("lists by status, flow and requester", () => {
    const { tasks, clock } = stores();
    for (const [id, flowId] of [
      ["a", "f1"],
      ["b", "f2"],
      ["c", "f1"],
    ] as const) {
      tasks.create({ taskId: id, runtime: "cli", flowId, requesterSessionKey: `s-${flowId}` });
      clock.advance(1);
    }
    tasks.transition("b", "running");
    expect(tasks.listByStatus("queued").map((t) => t.taskId)).toEqual(["a", "c"]);
    expect(tasks.listByStatus("running").map((t) => t.taskId)).toEqual(["b"]);
    expect(tasks.listByFlow("f1").map((t) => t.taskId)).toEqual(["a", "c"]);
    expect(tasks.listByRequester("s-f2").map((t) => t.taskId)).toEqual(["b"]);
    expect(tasks.listByStatus("queued", { limit: 1 }).map((t) => t.taskId)).toEqual(["a"]);
  });

  it("keeps delivery state per task and deletes it with the task", () => {
    const { tasks, db } = stores();
    tasks.create({ taskId: "t", runtime: "subagent" });
    tasks.create({ taskId: "u", runtime: "subagent" });
    expect(
      tasks.delivery.set("t", {
        status: "pending",
        requesterOrigin: { channel: "telegram", to: "42" },
      }),
    ).toMatchObject({
      status: "pending",
      requesterOrigin: { channel: "telegram", to: "42" },
      lastNotifiedAt: null,
    });
    tasks.delivery.set("u", { status: "pending" });
    expect(tasks.delivery.set("t", { status: "delivered", lastNotifiedAt: 7 })).toMatchObject({
      status: "delivered",
      requesterOrigin: { channel: "telegram", to: "42" },
      lastNotifiedAt: 7,
    });
    expect(tasks.delivery.listPending().map((d) => d.taskId)).toEqual(["u"]);
    expectStateError(
      () => tasks.delivery.set("nope", { status: "pending" }),
      "E_NOT_FOUND",
      /no task nope/,
    );
    expect(tasks.delete("t")).toBe(true);
    expect(tasks.delivery.get("t")).toBeUndefined();
    expect(rowCount(db, "task_delivery_state")).toBe(1);
  });
});

describe("FlowStore", () => {
  it("allows exactly the transitions in FLOW_TRANSITIONS and stamps the end", () => {
    const { flows, clock } = stores();
    let n = 0;
    for (const from of FLOW_STATUSES) {
      for (const to of FLOW_STATUSES) {
        const id = `f${n++}`;
        flows.create({ flowId: id, ownerKey: "agent:main:main", goal: "ship it", status: from });
        const allowed = FLOW_TRANSITIONS[from].includes(to);
        if (allowed) {
          const moved = flows.transition(id, to);
          expect(moved.status, `${from} → ${to}`).toBe(to);
          expect(moved.endedAt !== null).toBe(FLOW_TRANSITIONS[to].length === 0);
        } else expectStateError(() => flows.transition(id, to), "E_CONFLICT");
      }
    }
    expect(flows.get("f0")?.createdAt).toBe(clock.now());
  });

  it("bumps the revision on every change and refuses a stale expectedRevision", () => {
    const { flows } = stores();
    const flow = flows.create({
      flowId: "f",
      ownerKey: "o",
      goal: "g",
      record: { state: { step: 0 } },
    });
    expect(flow.revision).toBe(1);
    const running = flows.transition("f", "running", { expectedRevision: 1, currentStep: "plan" });
    expect(running).toMatchObject({ revision: 2, currentStep: "plan", status: "running" });
    const updated = flows.update("f", { record: { state: { step: 1 } }, expectedRevision: 2 });
    expect(updated).toMatchObject({
      revision: 3,
      status: "running",
      currentStep: "plan",
      record: { state: { step: 1 } },
    });
    expectStateError(
      () => flows.update("f", { currentStep: "x", expectedRevision: 2 }),
      "E_CONFLICT",
      /revision 3, expected 2/,
    );
    expect(flows.listByStatus("running").map((f) => f.flowId)).toEqual(["f"]);
    expect(flows.listByOwner("o").map((f) => f.flowId)).toEqual(["f"]);
    expect(flows.delete("f")).toBe(true);
  });
});

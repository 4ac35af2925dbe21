import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { NewTaskRun, TaskRecord } from "../stores/global/task-rows.js";
import {
  TASK_DELIVERY_STATUSES,
  TASK_STATUSES,
  TASK_TRANSITIONS,
  type TaskStatus,
} from "../stores/global/task-states.js";
import { TaskStore } from "../stores/global/task-store.js";
import { simulatedClock, useGlobalDb } from "../stores/global/test-support/global-db.js";
import type { ControlPlaneTasks } from "./control-plane.js";
import { BACKENDS, rejects, useControlPlanes } from "./test-support/control-planes.js";
import { outcome, same } from "./test-support/parity.js";

// Task runs on every backend, as control-plane.test.ts does the queue: each test runs on the
// embedded SQLite control plane and on a real PostgreSQL, with TaskStore on its own SQLite
// database as the oracle of parity and rows counted through a separate connection.

const open = useControlPlanes();
const openDb = useGlobalDb();

/** SQL text for a string literal, for `count`'s WHERE. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

describe.each(BACKENDS)("control plane on %s: task runs", (backend) => {
  const setup = async () => {
    const clock = simulatedClock();
    const opened = await open(backend, { clock: clock.now });
    const store = new TaskStore(openDb(), { clock: clock.now });
    return { ...opened, tasks: opened.cp.tasks, clock, store };
  };

  it("creates, gets, transitions, lists and deletes exactly as TaskStore does", async () => {
    const { tasks, store, clock, count } = await setup();
    const record = { task: "Find three papers", ünï: "😀", nested: { list: [1, 2.5, null] } };
    const news: NewTaskRun[] = [
      { taskId: "t1", runtime: "subagent", agentId: "main", flowId: "f1", record },
      { taskId: "t0", runtime: "cli", requesterSessionKey: "agent:main:main", flowId: "f1" },
      { taskId: "t2", runtime: "cron", status: "running", startedAt: 5, label: "nightly" },
      { taskId: "t3", runtime: "acp", requesterSessionKey: "agent:main:main", createdAt: 1 },
      { taskId: "t4", runtime: "acp", status: "lost", error: "host restarted", endedAt: 9 },
    ];
    for (const task of news) await same(tasks, store, (t) => t.create(task));
    clock.advance(1_000);
    await same(tasks, store, (t) => t.create({ taskId: "t1", runtime: "cli" }));
    await same(tasks, store, (t) => t.create({ runtime: "cli", priority: 1 } as never));
    await same(tasks, store, (t) => t.create({ taskId: "", runtime: "cli" }));
    await rejects(tasks.create(news[0] as NewTaskRun), "E_CONFLICT", /task t1 already exists/);
    // JSON is kept as TEXT, byte for byte.
    const json = JSON.stringify(record);
    expect(await count("task_runs", `record_json = ${literal(json)}`)).toBe(1);
    const [mine, theirs] = [
      await tasks.create({ runtime: "cli" }),
      store.create({ runtime: "cli" }),
    ];
    expect(mine.taskId).toMatch(/^[0-9a-f-]{36}$/);
    expect({ ...mine, taskId: "" }).toEqual({ ...theirs, taskId: "" });
    expect([await tasks.delete(mine.taskId), store.delete(theirs.taskId)]).toEqual([true, true]);
    clock.advance(1_000);
    const moves: [string, TaskStatus, object][] = [
      ["t1", "running", { expected: "queued", record: { progress: "searching" } }],
      ["t1", "succeeded", { at: clock.now() + 5, record: { task: "replaced" } }],
      ["t0", "cancelled", { error: "requester left" }],
      ["t2", "timed_out", {}],
      ["t3", "running", { expected: "running" }],
      ["t1", "failed", {}],
      ["nope", "running", {}],
    ];
    for (const [id, to, options] of moves) {
      clock.advance(7);
      await same(tasks, store, (t) => t.transition(id, to, options));
    }
    for (const list of [
      (t: ControlPlaneTasks | TaskStore) => t.listByStatus("queued"),
      (t: ControlPlaneTasks | TaskStore) => t.listByStatus("succeeded", { limit: 1 }),
      (t: ControlPlaneTasks | TaskStore) => t.listByFlow("f1"),
      (t: ControlPlaneTasks | TaskStore) => t.listByRequester("agent:main:main", { limit: 1 }),
      (t: ControlPlaneTasks | TaskStore) => t.listByRequester("agent:main:main"),
      (t: ControlPlaneTasks | TaskStore) => t.listByStatus("done" as TaskStatus),
      (t: ControlPlaneTasks | TaskStore) => t.listByFlow("f1", { limit: 0 }),
      (t: ControlPlaneTasks | TaskStore) => t.listByFlow("f1", { max: 1 } as never),
    ]) {
      await same(tasks, store, list);
    }
    expect((await tasks.listByRequester("agent:main:main")).map((t) => t.taskId)).toEqual([
      "t3",
      "t0",
    ]);
    for (const id of ["t1", "gone", "t1"]) await same(tasks, store, (t) => t.delete(id));
    await same(tasks, store, (t) => t.get("t1"));
    await same(tasks, store, (t) => t.get("t2"));
    expect(await count("task_runs")).toBe(4);
  });

  it("refuses on both every transition TASK_TRANSITIONS forbids, and changes nothing then", async () => {
    const { tasks, store, count } = await setup();
    let n = 0;
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        const id = `t${n++}`;
        await same(tasks, store, (t) => t.create({ taskId: id, runtime: "cron", status: from }));
        const got = await same(tasks, store, (t) => t.transition(id, to));
        const allowed = TASK_TRANSITIONS[from].includes(to);
        expect(got, `${from} -> ${to}`).toMatchObject(
          allowed ? { ok: { status: to } } : { code: "E_CONFLICT" },
        );
        expect((await tasks.get(id))?.status).toBe(allowed ? to : from);
      }
    }
    await same(tasks, store, (t) => t.create({ taskId: "q", runtime: "acp" }));
    const refusals: [TaskStatus, object][] = [
      ["succeeded", { expected: "running" }],
      ["done" as TaskStatus, {}],
      ["running", { at: -1 }],
      ["running", { record: { big: "x".repeat(300 * 1024) } }],
      ["running", { after: 1 }],
      ["running", { expected: "bogus" }],
    ];
    for (const [to, options] of refusals) {
      const got = await same(tasks, store, (t) => t.transition("q", to, options));
      expect(got).not.toHaveProperty("ok");
    }
    await rejects(tasks.transition("q", "running", { expected: "running" }), "E_CONFLICT");
    await rejects(tasks.transition("missing", "running"), "E_NOT_FOUND", /no task missing/);
    expect(await count("task_runs", "task_id = 'q' AND status = 'queued'")).toBe(1);
  });

  it("starts each of 50 queued tasks on exactly one of 4 racing control planes", async () => {
    const { cp, another, count } = await setup();
    const hosts = [cp, ...(await Promise.all([1, 2, 3].map(() => another())))];
    const ids = Array.from({ length: 50 }, (_, i) => `task-${String(i).padStart(2, "0")}`);
    for (const id of ids) await cp.tasks.create({ taskId: id, runtime: "subagent" });
    const attempts = ids.flatMap((id) =>
      hosts.map(async (host, h) => {
        const started = await outcome(() =>
          host.tasks.transition(id, "running", { expected: "queued", record: { host: h } }),
        );
        return { id, h, started };
      }),
    );
    const results = await Promise.all(attempts);
    const winners = results.filter((r) => "ok" in (r.started as object));
    const losers = results.filter((r) => !("ok" in (r.started as object)));
    expect(winners.length).toBe(50);
    expect(new Set(winners.map((r) => r.id)).size).toBe(50);
    expect(losers.length).toBe(150);
    for (const loser of losers) {
      expect(loser.started).toEqual({
        code: "E_CONFLICT",
        message: `task ${loser.id} is running, expected queued`,
      });
    }
    // The row names the winner: no loser's write landed after it.
    for (const { id, h } of winners) {
      expect(await count("task_runs", `task_id = '${id}' AND record_json = '{"host":${h}}'`)).toBe(
        1,
      );
    }
    expect(await count("task_runs", "status = 'running'")).toBe(50);
  });

  it("keeps delivery state as TaskDeliveryStore does, and deletes it with its task", async () => {
    const { tasks, store, clock, count } = await setup();
    for (const id of ["t", "u", "v"]) {
      await same(tasks, store, (t) => t.create({ taskId: id, runtime: "subagent" }));
    }
    const origin = { channel: "telegram", to: "42", thread: null, ü: [1.5] };
    const sets: [string, object][] = [
      ["t", { status: "pending", requesterOrigin: origin }],
      ["v", { status: "pending" }],
      ["u", { status: "pending", lastNotifiedAt: 3 }],
      ["t", { status: "delivered", lastNotifiedAt: 7 }],
      ["t", { status: "failed" }],
      ["u", { status: "pending", requesterOrigin: null }],
      ["nope", { status: "pending" }],
      ["t", { status: "sent" }],
      ["t", { status: "pending", extra: 1 }],
      ["t", { status: "pending", lastNotifiedAt: -5 }],
    ];
    for (const [id, update] of sets) {
      await same(tasks, store, (t) => t.delivery.set(id, update as never));
      await same(tasks, store, (t) => t.delivery.listPending());
      clock.advance(id === "v" ? 0 : 10);
    }
    await rejects(tasks.delivery.set("nope", { status: "pending" }), "E_NOT_FOUND", /no task nope/);
    await same(tasks, store, (t) => t.delivery.listPending({ limit: 1 }));
    for (const id of ["t", "u", "nope"]) await same(tasks, store, (t) => t.delivery.get(id));
    expect(
      await count(
        "task_delivery_state",
        `requester_origin_json = ${literal(JSON.stringify(origin))}`,
      ),
    ).toBe(1);
    await same(tasks, store, (t) => t.delete("t"));
    await same(tasks, store, (t) => t.delivery.get("t"));
    expect(await count("task_delivery_state")).toBe(2);
    expect(TASK_DELIVERY_STATUSES).toContain("session_queued");
  });

  it("gives TaskStore's answers to any sequence of calls (property)", async () => {
    const { tasks, store, clock } = await setup();
    let run = 0;
    const id = fc.constantFrom("a", "b", "c", "d");
    const status = fc.constantFrom(...TASK_STATUSES);
    const text = fc.constantFrom("x", "y", "ü z");
    const record = fc.dictionary(fc.constantFrom("k", "l", "m"), fc.oneof(fc.integer(), text));
    const command = fc.oneof(
      fc.record({
        op: fc.constant("create"),
        id,
        status: fc.option(status, { nil: undefined }),
        flow: fc.option(text, { nil: undefined }),
        requester: fc.option(text, { nil: undefined }),
        record,
      }),
      fc.record({
        op: fc.constant("transition"),
        id,
        to: status,
        expected: fc.option(status, { nil: undefined }),
        record: fc.option(record, { nil: undefined }),
        error: fc.option(text, { nil: undefined }),
      }),
      fc.record({ op: fc.constant("delete"), id }),
      fc.record({
        op: fc.constant("deliver"),
        id,
        to: fc.constantFrom(...TASK_DELIVERY_STATUSES),
        origin: fc.option(record, { nil: undefined }),
      }),
      fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 0, max: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        // Each run has its own ids, flows and requesters; lists by status span every run.
        const p = `r${++run}-`;
        for (const c of commands) {
          if (c.op === "tick") clock.advance(c.ms);
          else if (c.op === "create") {
            const task: NewTaskRun = {
              taskId: p + c.id,
              runtime: "cli",
              record: c.record as TaskRecord,
              ...(c.status && { status: c.status }),
              ...(c.flow && { flowId: p + c.flow }),
              ...(c.requester && { requesterSessionKey: p + c.requester }),
            };
            await same(tasks, store, (t) => t.create(task));
          } else if (c.op === "transition") {
            const options = {
              expected: c.expected,
              record: c.record as TaskRecord,
              error: c.error,
            };
            await same(tasks, store, (t) => t.transition(p + c.id, c.to, options));
          } else if (c.op === "delete") await same(tasks, store, (t) => t.delete(p + c.id));
          else {
            const update = { status: c.to, ...(c.origin && { requesterOrigin: c.origin }) };
            await same(tasks, store, (t) => t.delivery.set(p + c.id, update));
          }
        }
        for (const s of TASK_STATUSES)
          await same(tasks, store, (t) => t.listByStatus(s, { limit: 500 }));
        for (const k of ["x", "y", "ü z"]) {
          await same(tasks, store, (t) => t.listByFlow(p + k));
          await same(tasks, store, (t) => t.listByRequester(p + k, { limit: 2 }));
        }
        await same(tasks, store, (t) => t.delivery.listPending({ limit: 500 }));
      }),
      { numRuns: 60 },
    );
  });
});

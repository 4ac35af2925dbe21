import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { RunEventBus } from "./run-event-bus.js";
import type { RunEvent } from "./run-events.js";

function stream(seq: number): RunEvent {
  return { kind: "stream", text: `t${seq}`, runId: "r", seq, at: 0 };
}

const completed = {
  status: "completed" as const,
  text: "",
  usage: null,
  persisted: 0,
  failure: null,
};

describe("RunEventBus", () => {
  it("delivers in seq order to a slow async handler, however they arrive", async () => {
    const seen: number[] = [];
    const bus = new RunEventBus(async (event) => {
      await sleep(Math.floor(Math.random() * 5));
      seen.push(event.seq);
    });
    for (const seq of [2, 1, 4, 3, 3, 5, 1]) bus.push(stream(seq));
    await bus.drain();
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });

  it("stops calling a handler that threw and says so once", async () => {
    const seen: number[] = [];
    const errors: unknown[] = [];
    const bus = new RunEventBus((event) => {
      seen.push(event.seq);
      if (event.seq === 2) throw new TypeError("delivery failed");
    });
    bus.onHandlerError = (error) => errors.push(error);
    for (let seq = 1; seq <= 4; seq++) bus.push(stream(seq));
    await bus.drain();
    expect(seen).toEqual([1, 2]);
    expect(errors).toHaveLength(1);
    expect(bus.handlerFailed).toBe(true);
  });

  it("ends a stream without a final event with lifecycle end and a final", async () => {
    const seen: RunEvent[] = [];
    const bus = new RunEventBus((event) => {
      seen.push(event);
    });
    bus.push(stream(1));
    bus.push(stream(3));
    const failure = { kind: "exit" as const, message: "gone", exitCode: 1 };
    bus.close("r", { ...completed, status: "crashed", failure }, "thread");
    await bus.drain();
    expect(seen.map((e) => [e.seq, e.kind])).toEqual([
      [1, "stream"],
      [3, "stream"],
      [4, "lifecycle"],
      [5, "final"],
    ]);
    expect(seen.at(-1)).toMatchObject({ status: "crashed", failure });
  });

  it("adds nothing when the worker sent its final event", async () => {
    const bus = new RunEventBus();
    bus.push({
      kind: "final",
      status: "completed",
      text: "",
      failure: null,
      runId: "r",
      seq: 1,
      at: 0,
    });
    bus.close("r", completed, "thread");
    expect(bus.delivered).toBe(1);
  });

  it("recovers the stored messages it never heard, numbered after what it did, before end", async () => {
    const seen: RunEvent[] = [];
    const bus = new RunEventBus((event) => {
      seen.push(event);
    });
    const stored = ["u", "a1", "a2"].map((eventId, i) => ({
      role: i === 0 ? ("user" as const) : ("assistant" as const),
      eventId,
      transcriptSeq: i + 2,
      text: eventId,
    }));
    bus.push({ kind: "lifecycle", phase: "start", mode: "thread", runId: "r", seq: 1, at: 0 });
    bus.push({ kind: "message", ...(stored[0] as (typeof stored)[0]), runId: "r", seq: 2, at: 0 });
    bus.recover("r", stored, "thread");
    const failure = { kind: "exit" as const, message: "gone", exitCode: 1 };
    bus.close("r", { ...completed, status: "crashed", failure }, "thread");
    await bus.drain();
    expect(seen.map((e) => [e.seq, e.kind, e.kind === "message" ? e.eventId : ""])).toEqual([
      [1, "lifecycle", ""],
      [2, "message", "u"],
      [3, "message", "a1"],
      [4, "message", "a2"],
      [5, "lifecycle", ""],
      [6, "final", ""],
    ]);
    expect(bus.messages).toBe(3);
  });

  it("opens with lifecycle start when it heard nothing from a dead worker", async () => {
    const seen: RunEvent[] = [];
    const silent = new RunEventBus((event) => {
      seen.push(event);
    });
    silent.recover("r", [], "process");
    await silent.drain();
    expect(seen).toEqual([expect.objectContaining({ kind: "lifecycle", phase: "start", seq: 1 })]);
  });
});

import { describe, expect, it } from "vitest";
import { Checkpointer } from "./checkpointer.js";
import { GATE_CHECKPOINTING, GATE_HELD } from "./checkpointer-protocol.js";

// The test plays the thread's part on the shared words: it raises GATE_CHECKPOINTING as a round
// in progress does, and reads GATE_HELD, which the thread obeys before starting a round.
function gated() {
  const gate = new Int32Array(new SharedArrayBuffer(8));
  return { gate, checkpointer: new Checkpointer(gate) };
}

describe("Checkpointer.whileHeld", () => {
  it("runs the catch-up at once when no round is in progress, and lets go after it", () => {
    const { gate, checkpointer } = gated();
    // The catch-up sees the thread held; after it, the thread is free again.
    expect(checkpointer.whileHeld({}, 5, () => Atomics.load(gate, GATE_HELD))).toBe(1);
    expect(Atomics.load(gate, GATE_HELD)).toBe(0);
  });

  it("keeps the thread held when a long round makes it wait, so the next try gets in", () => {
    const { gate, checkpointer } = gated();
    const writer = {};
    Atomics.store(gate, GATE_CHECKPOINTING, 1); // a round that outlasts the wait
    let ran = 0;
    expect(checkpointer.whileHeld(writer, 1, () => ++ran)).toBeUndefined();
    expect(ran).toBe(0);
    // Still held: the thread, once this round ends, starts no other before the writer's retry.
    expect(Atomics.load(gate, GATE_HELD)).toBe(1);
    Atomics.store(gate, GATE_CHECKPOINTING, 0);
    expect(checkpointer.whileHeld(writer, 1, () => ++ran)).toBe(1);
    expect(Atomics.load(gate, GATE_HELD)).toBe(0);
  });

  it("holds once per writer, and lets go when the last holder does", () => {
    const { gate, checkpointer } = gated();
    const [a, b] = [{}, {}];
    Atomics.store(gate, GATE_CHECKPOINTING, 1);
    expect(checkpointer.whileHeld(a, 1, () => 0)).toBeUndefined();
    expect(checkpointer.whileHeld(a, 1, () => 0)).toBeUndefined();
    expect(checkpointer.whileHeld(b, 1, () => 0)).toBeUndefined();
    expect(Atomics.load(gate, GATE_HELD)).toBe(1);
    checkpointer.letGo(a);
    expect(Atomics.load(gate, GATE_HELD)).toBe(1); // b still waits for its catch-up
    checkpointer.letGo(b);
    checkpointer.letGo(b);
    expect(Atomics.load(gate, GATE_HELD)).toBe(0);
  });
});

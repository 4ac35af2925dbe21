import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { vi } from "vitest";

/** mulberry32: a small seeded generator, so that both runs of a script draw the same values. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const originalRandomUUID = crypto.randomUUID;

/**
 * Makes `randomUUID` (pi's entry ids) a seeded sequence. pi imports it by name from the built-in
 * module; `syncBuiltinESMExports` carries the replacement to those bindings.
 */
export function seedIds(seed: number): void {
  const next = generator(seed);
  const hex = () => Math.floor(next() * 16).toString(16);
  crypto.randomUUID = (() =>
    Array.from({ length: 36 }, (_, i) => ([8, 13, 18, 23].includes(i) ? "-" : hex())).join(
      "",
    )) as typeof crypto.randomUUID;
  syncBuiltinESMExports();
}

export function restoreIds(): void {
  crypto.randomUUID = originalRandomUUID;
  syncBuiltinESMExports();
}

/** A fake `Date` only (timers stay real: SQLite's busy waits must not stall). */
export function freezeClock(at: number): void {
  vi.useFakeTimers({ toFake: ["Date"], now: at });
}

export function setClock(at: number): void {
  vi.setSystemTime(at);
}

export function restoreClock(): void {
  vi.useRealTimers();
}

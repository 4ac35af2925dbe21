import type { RunBlocker } from "./run-events.js";

/** Prototypes whose instances the structured clone algorithm copies faithfully. */
const CLONEABLE: readonly (abstract new (...args: never[]) => unknown)[] = [
  Array,
  Date,
  RegExp,
  Map,
  Set,
  ArrayBuffer,
  DataView,
  Error,
  Boolean,
  Number,
  String,
];

function isCloneableInstance(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  if (proto === null || proto === Object.prototype) return true;
  if (ArrayBuffer.isView(value)) return true;
  return CLONEABLE.some((type) => value instanceof type);
}

function describe(value: object): string {
  if (typeof AbortSignal !== "undefined" && value instanceof AbortSignal) return "an AbortSignal";
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return `a live ${typeof name === "string" && name !== "" ? name : "object"} (class instance)`;
}

function join(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/**
 * Everything inside `value` that would not reach a worker intact, by path: functions and symbols
 * (structuredClone throws), and class instances such as handles, sockets or abort signals (they
 * would arrive as plain objects without their methods, which is worse than failing).
 */
export function findCloneBlockers(value: unknown, path: string): RunBlocker[] {
  const blockers: RunBlocker[] = [];
  const seen = new Set<object>();
  const visit = (current: unknown, at: string): void => {
    if (typeof current === "function") blockers.push({ path: at, reason: "a function" });
    else if (typeof current === "symbol") blockers.push({ path: at, reason: "a symbol" });
    if (typeof current !== "object" || current === null || seen.has(current)) return;
    seen.add(current);
    if (!isCloneableInstance(current)) {
      blockers.push({ path: at, reason: describe(current) });
      return;
    }
    if (current instanceof Map) {
      for (const [key, item] of current) visit(item, join(at, String(key)));
    } else if (current instanceof Set) {
      let i = 0;
      for (const item of current) visit(item, join(at, i++));
    } else if (!ArrayBuffer.isView(current) && !(current instanceof ArrayBuffer)) {
      for (const key of Object.keys(current)) {
        visit(
          (current as Record<string, unknown>)[key],
          join(at, Array.isArray(current) ? Number(key) : key),
        );
      }
    }
  };
  visit(value, path);
  return blockers;
}

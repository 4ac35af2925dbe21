import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { type Database, openDatabase } from "../../../db/database.js";
import { isStateError, type StateErrorCode } from "../../../db/errors.js";
import { useTempDirs } from "../../../test-support/temp-dir.js";

/** A fresh, migrated global database per call, in a temp dir removed after the test. */
export function useGlobalDb(): () => Database {
  const tempDir = useTempDirs();
  const opened: Database[] = [];
  afterEach(() => {
    for (const db of opened.splice(0)) db.close();
  });
  return () => {
    const db = openDatabase({ path: join(tempDir(), "state.sqlite"), role: "global" });
    opened.push(db);
    return db;
  };
}

/** A clock the test moves by hand. */
export function simulatedClock(start = Date.UTC(2026, 4, 6, 12)) {
  let now = start;
  return {
    now: () => now,
    set: (at: number) => {
      now = at;
    },
    advance: (ms: number) => {
      now += ms;
      return now;
    },
  };
}

export function expectStateError(fn: () => unknown, code: StateErrorCode, message?: RegExp): void {
  try {
    fn();
    expect.unreachable(`expected ${code}`);
  } catch (error) {
    expect(isStateError(error, code), String(error)).toBe(true);
    if (message) expect((error as Error).message).toMatch(message);
  }
}

export function rowCount(db: Database, table: string): number {
  return (db.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
}

import type { SqlDriver } from "./driver.js";

/**
 * Runs `fn` with SQLite's temporary storage in memory, then puts the setting back. Schema changes
 * and bulk copies open statement journals, sorts and automatic indexes; by default SQLite keeps
 * them in files in /var/tmp, outside the home, its permissions and its disk. Each is bounded by
 * one statement's work. Must be called outside a transaction (SQLite refuses the pragma inside).
 */
export function withTempInMemory<T>(driver: Pick<SqlDriver, "exec" | "prepare">, fn: () => T): T {
  const before = driver.prepare<{ temp_store: number }>("PRAGMA temp_store").get()?.temp_store;
  driver.exec("PRAGMA temp_store = MEMORY");
  try {
    return fn();
  } finally {
    driver.exec(`PRAGMA temp_store = ${before ?? 0}`);
  }
}

import type { DriverName } from "./driver.js";

/** What a process's threads tell its checkpointer thread. */
export type ToCheckpointer =
  /** `path` has new frames (sent at most every few ms per database, not per commit). */
  | { type: "active"; path: string; driver: DriverName }
  /** Close the connection to `path`, then store `seq` in the ack word and wake the waiter. */
  | { type: "drop"; path: string; seq: number };

/** Words of the `gate` buffer. */
export const GATE_CHECKPOINTING = 0;
export const GATE_HELD = 1;

export interface CheckpointerData {
  /** One Int32: the `seq` of the last `drop` done. */
  ack: SharedArrayBuffer;
  /**
   * Two Int32s: the thread sets GATE_CHECKPOINTING while it runs a round; a writer that must
   * checkpoint itself raises GATE_HELD, and the thread starts no round while it is raised.
   * SQLite refuses a second checkpoint outright (it takes no busy wait for that lock).
   */
  gate: SharedArrayBuffer;
  tickMs: number;
  idleMs: number;
}

/** What `PRAGMA wal_checkpoint(…)` returns: frames in the WAL, and how many are copied back. */
export interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

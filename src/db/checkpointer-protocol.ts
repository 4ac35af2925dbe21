import type { DriverName } from "./driver.js";

/** What a process's threads tell its checkpointer thread. */
export type ToCheckpointer =
  /** `path` has new frames (sent at most every few ms per database, not per commit). */
  | { type: "active"; path: string; driver: DriverName }
  /** Close the connection to `path`, then store `seq` in the ack word and wake the waiter. */
  | { type: "drop"; path: string; seq: number }
  /**
   * Hold a connection to `path` (opened now unless held already), then store `seq`: the last
   * connection of the caller's thread can then close without being the file's last.
   */
  | { type: "adopt"; path: string; driver: DriverName; seq: number }
  /** The caller's thread has closed `path`: close this thread's connection (the file's last), then store `seq`. */
  | { type: "release"; path: string; seq: number }
  /** Store `seq` once every message before this one is done. */
  | { type: "barrier"; seq: number };

/** Words of the `gate` buffer. */
export const GATE_CHECKPOINTING = 0;
export const GATE_HELD = 1;

export interface CheckpointerData {
  /** One Int32: the `seq` of the last `drop`, `adopt` or `barrier` done (they come in order). */
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

import type { DriverName } from "./driver.js";

/** What a process's threads tell its checkpointer thread. */
export type ToCheckpointer =
  /** `path` has new frames (sent at most every few ms per database, not per commit). */
  | { type: "active"; path: string; driver: DriverName }
  /** Close the connection to `path`, then store `seq` in the ack word and wake the waiter. */
  | { type: "drop"; path: string; seq: number };

export interface CheckpointerData {
  /** One Int32: the `seq` of the last `drop` done. */
  ack: SharedArrayBuffer;
  tickMs: number;
  idleMs: number;
}

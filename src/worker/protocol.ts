import type { CancelKind } from "./cancel.js";
import type { TurnOutcome } from "./execute-turn.js";
import type { PreparedAgentRun } from "./prepared-run.js";
import type { RunEvent } from "./run-events.js";

/** Parent → worker. Plain data: the same messages go over a MessagePort and a process's IPC. */
export type ToWorker =
  | { type: "run"; run: PreparedAgentRun }
  | { type: "cancel"; runId: string; kind: CancelKind; message: string };

/** Worker → parent. */
export type FromWorker =
  /** Events in emit order: stream chunks of one event-loop pass, up to the next other event. */
  | { type: "events"; events: RunEvent[] }
  /** The cancel took effect: the run's signal fired and its writes are fenced off. */
  | { type: "cancelled"; runId: string }
  | { type: "done"; runId: string; outcome: TurnOutcome }
  /** A forked process about to die of an uncaught error says why first. */
  | { type: "crash"; message: string };

// Worker-thread entry of the cold storage thread (cold-thread.ts): writes the search rows of
// sessions being moved cold, each on a connection of its own, and inflates archive members for
// restores, one job at a time.
import { closeSync, openSync, readSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../../db/database.js";
import { isStateError, StateError } from "../../db/errors.js";
import { inflateMember } from "../../transcript/cold-archive.js";
import { statementsOf, writeColdRows } from "./cold-index.js";
import type { ColdThreadAnswer, ColdThreadData, ColdThreadJob } from "./cold-thread.js";

const port = parentPort;
if (port === null) throw new TypeError("Expected cold-thread-worker.js to run as a worker thread");
const data = workerData as ColdThreadData;
const words = new Int32Array(data.words);

function writeIndex(job: Extract<ColdThreadJob, { kind: "index" }>): void {
  const db = openDatabase({
    path: job.path,
    role: "cold-index",
    journalMode: "rollback",
    checkpoints: "inline",
    driver: job.driver,
    // The move created the file before it handed the job over; a file gone since is an error.
    create: false,
  });
  try {
    writeColdRows(statementsOf(db), job, (rows) => Atomics.store(words, 1, rows));
  } finally {
    db.close();
  }
}

function inflate(job: Extract<ColdThreadJob, { kind: "inflate" }>): Uint8Array {
  const bytes = Buffer.allocUnsafe(job.length);
  const fd = openSync(job.path, "r");
  try {
    if (readSync(fd, bytes, 0, job.length, job.offset) !== job.length) {
      throw new StateError(
        "E_CORRUPT",
        `cold archive ${job.path}: member ${job.member} is cut short`,
      );
    }
  } finally {
    closeSync(fd);
  }
  return inflateMember(bytes, `member ${job.member}`);
}

function run(job: ColdThreadJob): { answer: ColdThreadAnswer; transfer: ArrayBuffer[] } {
  try {
    if (job.kind === "index") {
      writeIndex(job);
      return { answer: { ticket: job.ticket }, transfer: [] };
    }
    const inflated = inflate(job);
    // Moved to the waiting thread when the bytes are their buffer's own; copied otherwise.
    const owned =
      inflated.byteOffset === 0 && inflated.byteLength === inflated.buffer.byteLength
        ? inflated
        : Uint8Array.prototype.slice.call(inflated);
    return {
      answer: { ticket: job.ticket, data: owned },
      transfer: [owned.buffer as ArrayBuffer],
    };
  } catch (error) {
    const { code, message, details } = isStateError(error)
      ? error
      : { code: "E_IO", message: String((error as Error)?.message ?? error), details: {} };
    return { answer: { ticket: job.ticket, error: { code, message, details } }, transfer: [] };
  }
}

port.on("message", (job: ColdThreadJob) => {
  Atomics.store(words, 1, 0);
  const { answer, transfer } = run(job);
  // Answered before the ticket is marked done: the waiter reads the answer once it wakes.
  data.answers.postMessage(answer, transfer);
  Atomics.store(words, 0, job.ticket);
  Atomics.notify(words, 0);
});

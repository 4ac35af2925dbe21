// Worker-thread entry of the cold index thread (cold-index-thread.ts): writes the search rows of
// sessions being moved cold, one job at a time, each on a connection of its own.
import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { statementsOf, writeColdRows } from "./cold-index.js";
import type {
  ColdIndexThreadAnswer,
  ColdIndexThreadData,
  ColdIndexThreadJob,
} from "./cold-index-thread.js";

const port = parentPort;
if (port === null) throw new TypeError("Expected cold-index-worker.js to run as a worker thread");
const data = workerData as ColdIndexThreadData;
const words = new Int32Array(data.words);

function run(job: ColdIndexThreadJob): ColdIndexThreadAnswer {
  try {
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
    return { ticket: job.ticket };
  } catch (error) {
    const { code, message, details } = isStateError(error)
      ? error
      : { code: "E_SQLITE", message: String((error as Error)?.message ?? error), details: {} };
    return { ticket: job.ticket, error: { code, message, details } };
  }
}

port.on("message", (job: ColdIndexThreadJob) => {
  Atomics.store(words, 1, 0);
  // Answered before the ticket is marked done: the waiter reads the answer once it wakes.
  data.answers.postMessage(run(job));
  Atomics.store(words, 0, job.ticket);
  Atomics.notify(words, 0);
});

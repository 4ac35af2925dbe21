// Worker-thread entry of the search threads (agent-search-threads.ts): claims agents of a search
// one at a time, searches each over a bare connection of its own, and answers for each.
import { type MessagePort, parentPort, workerData } from "node:worker_threads";
import {
  type SearchThreadAnswer,
  type SearchThreadCall,
  searchOne,
  sendable,
} from "./agent-search-threads.js";

const port = parentPort;
if (port === null) throw new TypeError("Expected agent-search-worker.js to run as a worker thread");
const { answers } = workerData as { answers: MessagePort };

port.on("message", ({ call, job, words: shared }: SearchThreadCall) => {
  const words = new Int32Array(shared);
  for (let i = Atomics.add(words, 0, 1); i < job.items.length; i = Atomics.add(words, 0, 1)) {
    const answer: SearchThreadAnswer = { ...sendable(searchOne(job, i)), call, index: i };
    // Answered before the agent is counted done: the caller reads the answers once all are.
    answers.postMessage(answer);
    Atomics.add(words, 1, 1);
    Atomics.notify(words, 1);
  }
});

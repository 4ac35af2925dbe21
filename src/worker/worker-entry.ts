// The main module of a worker thread: serves turns posted by the parent's pool.
import { parentPort } from "node:worker_threads";
import { serveTurns } from "./worker-host.js";

const port = parentPort;
if (port === null) throw new TypeError("Expected worker-entry.js to run as a worker thread");
serveTurns(
  {
    post: (message) => port.postMessage(message),
    onMessage: (handler) => port.on("message", handler),
  },
  "thread",
);

// Worker-thread entry of SnapshotChecker: checks the snapshots it is sent, one at a time, and
// keeps those sent with `hold` open until it is told to quit.
import { parentPort } from "node:worker_threads";
import { type CheckRequest, checkSnapshotHeld } from "./snapshot-check.js";

const held: Array<() => void> = [];

parentPort?.on("message", (request: CheckRequest) => {
  if (request.type === "check") {
    const { result, release } = checkSnapshotHeld(request.path, request.part, request.driver);
    // Unheld, the file is closed before the answer goes out: the caller may move or reuse it then.
    if (request.hold) held.push(release);
    else release();
    parentPort?.postMessage({ id: request.id, result });
  } else {
    for (const release of held.splice(0)) release();
    parentPort?.close();
  }
});

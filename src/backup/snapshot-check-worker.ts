// Worker-thread entry of SnapshotChecker: checks the snapshots it is sent, one at a time, and
// keeps the ones sent with `hold` open until they are released.
import { parentPort } from "node:worker_threads";
import { type CheckRequest, checkSnapshotHeld } from "./snapshot-check.js";

const held = new Map<string, Array<() => void>>();

function release(path: string): void {
  for (const close of held.get(path) ?? []) close();
  held.delete(path);
}

parentPort?.on("message", (request: CheckRequest) => {
  if (request.type === "check") {
    const { result, release: close } = checkSnapshotHeld(request.path, request.part);
    parentPort?.postMessage({ id: request.id, result });
    if (request.hold) held.set(request.path, [...(held.get(request.path) ?? []), close]);
    else close();
  } else if (request.type === "release") {
    release(request.path);
  } else {
    for (const path of [...held.keys()]) release(path);
    parentPort?.close();
  }
});

// Worker-thread entry of SnapshotChecker: checks the snapshots it is sent, one at a time.
import { parentPort } from "node:worker_threads";
import { type CheckPart, checkSnapshot } from "./snapshot-check.js";

parentPort?.on("message", (request: { id: number; path: string; part: CheckPart }) => {
  parentPort?.postMessage({ id: request.id, result: checkSnapshot(request.path, request.part) });
});

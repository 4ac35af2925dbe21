// Worker-thread entry of StorageMeter: measures the databases it is sent, one at a time, each on
// a read-only connection it opens and closes, so `dbstat`'s walk over every page never holds up
// the server's thread.
import { parentPort } from "node:worker_threads";
import { measureStorageFile } from "./storage-families.js";
import type { StorageReply, StorageRequest } from "./storage-meter.js";

parentPort?.on("message", (request: StorageRequest) => {
  let reply: StorageReply;
  try {
    reply = { id: request.id, breakdown: measureStorageFile(request.path, request.driver) };
  } catch (error) {
    reply = { id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort?.postMessage(reply);
});

import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { DriverName } from "../db/driver.js";
import { chooseDriver } from "../db/driver-choice.js";
import { StateError } from "../db/errors.js";
import { measureStorageFile, type StorageBreakdown } from "./storage-families.js";

export interface StorageRequest {
  id: number;
  path: string;
  driver: DriverName;
}

export type StorageReply =
  | { id: number; breakdown: StorageBreakdown }
  | { id: number; error: string };

type Pending = { resolve: (b: StorageBreakdown) => void; reject: (e: Error) => void };

/**
 * Measures databases on a thread of its own (started on first use, one file at a time): on a
 * million-event agent `dbstat` reads every page for about a second, which on the server's thread
 * would hold every other request. From the TypeScript sources (the unit tests) there is no
 * compiled worker to start; the measurement then runs inline.
 */
export class StorageMeter {
  private readonly file = fileURLToPath(new URL("./storage-worker.js", import.meta.url));
  private readonly driver = chooseDriver();
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  measure(path: string): Promise<StorageBreakdown> {
    if (!existsSync(this.file)) {
      try {
        return Promise.resolve(measureStorageFile(path, this.driver));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, path, driver: this.driver } satisfies StorageRequest);
    });
  }

  /** Ends the thread; a measurement still running is left to finish unheard. */
  close(): void {
    const worker = this.worker;
    this.worker = null;
    this.failAll("the storage thread was closed");
    void worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.file);
    // Never what keeps the process alive: a server's socket does that.
    worker.unref();
    worker.on("message", (reply: StorageReply) => {
      const pending = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if ("error" in reply) pending?.reject(new StateError("E_IO", reply.error));
      else pending?.resolve(reply.breakdown);
    });
    worker.on("error", (error) => this.lost(worker, `the storage thread failed: ${error.message}`));
    worker.on("exit", () => this.lost(worker, "the storage thread exited"));
    this.worker = worker;
    return worker;
  }

  private lost(worker: Worker, message: string): void {
    if (this.worker === worker) this.failAll(message);
  }

  private failAll(message: string): void {
    for (const { reject } of this.pending.values()) reject(new StateError("E_IO", message));
    this.pending.clear();
    this.worker = null;
  }
}

import type { ResourceLimits } from "node:worker_threads";
import { startThread, type WorkerTransport } from "./transport.js";

export interface WorkerPoolOptions {
  /** The most worker threads alive at once. */
  size: number;
  /** The built `worker-entry.js`. */
  entry: string;
  /** Per-thread V8 limits; a thread that exceeds them dies and its run ends `crashed`. */
  resourceLimits?: ResourceLimits;
}

/**
 * Up to `size` long-lived worker threads, started on demand. A thread runs one turn at a time and
 * then takes the next; one that crashed or was cancelled is discarded and replaced by a fresh
 * one, so no run inherits another's runaway backend.
 */
export class WorkerPool {
  private readonly idle: WorkerTransport[] = [];
  private readonly waiting: Array<() => void> = [];
  private readonly all = new Set<WorkerTransport>();
  private busy = 0;
  private closed = false;

  constructor(private readonly options: WorkerPoolOptions) {}

  async acquire(): Promise<WorkerTransport> {
    for (;;) {
      if (this.closed) throw new TypeError("Expected an open worker pool; it was closed");
      const reused = this.takeIdle();
      if (reused) return this.lease(reused);
      if (this.busy < this.options.size) {
        const fresh = startThread(this.options.entry, this.options.resourceLimits);
        this.all.add(fresh);
        return this.lease(fresh);
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  release(transport: WorkerTransport, reusable: boolean): void {
    this.busy--;
    transport.setBusy(false);
    if (reusable && transport.alive && !this.closed) this.idle.push(transport);
    else this.discard(transport);
    this.waiting.shift()?.();
  }

  /** Threads alive now (busy and idle). */
  get threads(): number {
    return [...this.all].filter((t) => t.alive).length;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake();
    await Promise.all([...this.all].map((t) => t.kill()));
    this.all.clear();
    this.idle.length = 0;
  }

  private takeIdle(): WorkerTransport | undefined {
    for (let t = this.idle.pop(); t; t = this.idle.pop()) {
      if (t.alive) return t;
      this.all.delete(t);
    }
    return undefined;
  }

  private lease(transport: WorkerTransport): WorkerTransport {
    this.busy++;
    transport.setBusy(true);
    return transport;
  }

  private discard(transport: WorkerTransport): void {
    this.all.delete(transport);
    if (transport.alive) void transport.kill();
  }
}

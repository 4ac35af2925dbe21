import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import { isStateError } from "../db/errors.js";
import type { ChangeHub } from "./change-hub.js";

const KEEP_ALIVE_MS = 15_000;
/** How soon a dropped EventSource reconnects (it resumes from Last-Event-ID). */
const RETRY_MS = 1000;

/** Resolves a pending `wait` on `wake`; a wake with no one waiting is kept for the next wait. */
class Wakeup {
  private pending = false;
  private resolve: ((woken: boolean) => void) | undefined;

  wake(): void {
    if (this.resolve) this.resolve(true);
    else this.pending = true;
  }

  /** True when woken, false when `ms` passed first. */
  wait(ms: number): Promise<boolean> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(false), ms);
      const finish = (woken: boolean) => {
        clearTimeout(timer);
        this.resolve = undefined;
        resolve(woken);
      };
      this.resolve = finish;
    });
  }
}

export interface ChangeStreamOptions {
  /**
   * Writes whatever is new since the last call (the first call: since the client's position).
   * Returns true when more is already waiting, e.g. a page was full, to be called again at once.
   */
  send(stream: SSEStreamingApi): Promise<boolean>;
  keepAliveMs?: number;
}

/**
 * Server-Sent Event streams that follow an agent's database: each stream sends what is new, then
 * sleeps until the ChangeHub reports a commit. `close()` ends every open stream, so a server can
 * shut down although browsers keep their EventSources open.
 */
export class LiveStreams {
  private readonly open = new Set<SSEStreamingApi>();

  constructor(readonly hub: ChangeHub) {}

  stream(c: Context, agentId: string, options: ChangeStreamOptions): Response {
    return streamSSE(c, async (stream) => {
      const wakeup = new Wakeup();
      const unsubscribe = this.hub.subscribe(agentId, () => wakeup.wake());
      this.open.add(stream);
      stream.onAbort(() => wakeup.wake());
      try {
        await stream.write(`retry: ${RETRY_MS}\n\n`);
        while (!stream.aborted && !stream.closed) {
          if (await options.send(stream)) continue;
          const woken = await wakeup.wait(options.keepAliveMs ?? KEEP_ALIVE_MS);
          // A comment line: proxies and browsers see traffic, EventSource ignores it.
          if (!woken && !stream.aborted) await stream.write(": keep-alive\n\n");
        }
      } catch (error) {
        // Headers are long gone: the failure goes to the client as a last event, then the end.
        const { code, message } = isStateError(error)
          ? error
          : { code: "E_INTERNAL", message: "internal server error" };
        if (!isStateError(error)) console.error("agentstate serve: live stream:", error);
        await stream.writeSSE({ event: "failure", data: JSON.stringify({ code, message }) });
      } finally {
        unsubscribe();
        this.open.delete(stream);
      }
    });
  }

  get size(): number {
    return this.open.size;
  }

  close(): void {
    for (const stream of this.open) stream.abort();
    this.hub.close();
  }
}

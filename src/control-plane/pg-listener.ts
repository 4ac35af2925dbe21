import pg from "pg";
import { WORK_CHANNEL } from "./pg-queue-sql.js";
import { wrapPgError } from "./pg-statements.js";
import type { WorkSignal } from "./work-signal.js";

/**
 * One dedicated connection LISTENing for enqueues from every host (a pooled connection cannot
 * LISTEN: it goes back to the pool). Connected on the first `waitForWork`; after an error it is
 * dropped and the next wait reconnects, waits in between ending by their timeout.
 */
export class PgListener {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly signal: WorkSignal,
  ) {}

  ready(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.connecting ??= this.connect().catch((error: unknown) => {
      this.connecting = undefined;
      throw wrapPgError(error);
    });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on("notification", (message) => {
      if (message.payload) this.signal.wake(message.payload);
    });
    client.on("error", () => {
      this.connecting = undefined;
      this.client = undefined;
      client.end().catch(() => {});
    });
    await client.connect();
    await client.query(`LISTEN ${WORK_CHANNEL}`);
    this.client = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting?.catch(() => {});
    await this.client?.end().catch(() => {});
    this.client = undefined;
  }
}

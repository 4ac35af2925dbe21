import pg from "pg";
import { wrapPgError } from "./pg-statements.js";

/** What to do with a notification's payload, by channel. */
export type Channels = Readonly<Record<string, (payload: string) => void>>;

/**
 * One dedicated connection LISTENing on every channel for news from every host (a pooled
 * connection cannot LISTEN: it goes back to the pool). Connected on the first wait; after an
 * error it is dropped and the next wait reconnects, waits in between ending by their timeout.
 */
export class PgListener {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channels: Channels,
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
      this.channels[message.channel]?.(message.payload ?? "");
    });
    client.on("error", () => {
      this.connecting = undefined;
      this.client = undefined;
      client.end().catch(() => {});
    });
    await client.connect();
    for (const channel of Object.keys(this.channels)) await client.query(`LISTEN ${channel}`);
    this.client = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting?.catch(() => {});
    await this.client?.end().catch(() => {});
    this.client = undefined;
  }
}

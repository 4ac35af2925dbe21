import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One message the platform received and kept: what a user would see in their chat. */
export interface PlatformSend {
  deliveryId: string;
  idempotencyKey: string;
  inReplyTo: string;
  text: string;
  messageId: string;
}

export interface PlatformOptions {
  /** 0..1, drawn per request: replies are answered after up to `maxDelayMs` × this. */
  random: () => number;
  maxDelayMs: number;
  /** The share of deliveries whose first attempt the platform refuses (503, nothing kept). */
  refuseShare: number;
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  let body = "";
  for await (const chunk of request) body += chunk;
  return body;
}

/**
 * The chat platform of the gateway example: `POST /send` keeps the message as soon as the request
 * is complete (before answering, so a gateway killed while waiting leaves a message it never heard
 * of), `GET /sent?deliveryId=` tells whether it has one for that delivery.
 */
export class FakePlatform {
  readonly sends: PlatformSend[] = [];
  private readonly refused = new Set<string>();
  private readonly server: Server;

  constructor(private readonly options: PlatformOptions) {
    this.server = createServer((request, response) => {
      this.handle(request).then(
        ([status, body]) => response.writeHead(status).end(JSON.stringify(body)),
        (error: Error) => response.writeHead(500).end(error.message),
      );
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async handle(request: IncomingMessage): Promise<[number, unknown]> {
    const url = new URL(request.url ?? "/", "http://platform");
    const body = await bodyOf(request);
    if (request.method === "GET" && url.pathname === "/sent") {
      const id = url.searchParams.get("deliveryId");
      const found = this.sends.findLast((send) => send.deliveryId === id);
      return [200, found ? { sent: true, messageId: found.messageId } : { sent: false }];
    }
    if (request.method !== "POST" || url.pathname !== "/send") return [404, {}];
    const message = JSON.parse(body) as Omit<PlatformSend, "messageId">;
    const { random, maxDelayMs, refuseShare } = this.options;
    if (!this.refused.has(message.deliveryId) && random() < refuseShare) {
      this.refused.add(message.deliveryId);
      return [503, { error: "try again later" }];
    }
    const messageId = `pm-${this.sends.length + 1}`;
    this.sends.push({ ...message, messageId });
    await new Promise((resolve) => setTimeout(resolve, random() * maxDelayMs));
    return [200, { messageId }];
  }
}

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp, type ServerApp } from "./app.js";
import { type SeededHome, seedHome } from "./test-support/seed-home.js";

const tempDir = useTempDirs();
const LOCAL = "http://127.0.0.1:4711";
/** Generous: the poll is 250 ms; the assertion is that it arrives, not how fast. */
const WAIT_MS = 5000;

interface SseMessage {
  event: string;
  id: string | undefined;
  data: string;
}

/** Reads Server-Sent Events off a response body, one message at a time. */
class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = "";

  constructor(response: Response) {
    if (!response.body) throw new Error("no body");
    this.reader = response.body.getReader();
  }

  /** The next message whose event is `event` (others are skipped), or a timeout error. */
  async next(event: string, ms = WAIT_MS): Promise<SseMessage> {
    const deadline = Date.now() + ms;
    for (;;) {
      const message = this.take();
      if (message?.event === event) return message;
      if (message) continue;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`no "${event}" event within ${ms} ms`);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no "${event}" event within ${ms} ms`)),
          remaining,
        );
      });
      const chunk = await Promise.race([this.reader.read(), timeout]).finally(() =>
        clearTimeout(timer),
      );
      if (chunk.done) throw new Error("stream ended");
      this.buffer += this.decoder.decode(chunk.value, { stream: true });
    }
  }

  async cancel(): Promise<void> {
    await this.reader.cancel();
  }

  private take(): SseMessage | undefined {
    const end = this.buffer.indexOf("\n\n");
    if (end === -1) return undefined;
    const block = this.buffer.slice(0, end);
    this.buffer = this.buffer.slice(end + 2);
    const message: SseMessage = { event: "message", id: undefined, data: "" };
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) message.event = line.slice(7);
      else if (line.startsWith("id: ")) message.id = line.slice(4);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
      else if (line.startsWith(":") || line.startsWith("retry: ")) message.event ||= "comment";
    }
    message.data = data.join("\n");
    return message;
  }
}

let seeded: SeededHome;
let home: StateHome;
let writer: StateHome;
let server: ServerApp;

beforeEach(() => {
  seeded = seedHome(tempDir());
  home = openStateHome({ home: seeded.home, create: false });
  // Another connection, as another process would have: its commits move data_version.
  writer = openStateHome({ home: seeded.home, create: false });
  server = createApp({ home, write: true, pollMs: 100 });
});

afterEach(() => {
  server.close();
  writer.close();
  home.close();
});

const say = (text: string) => ({
  type: "message",
  message: { role: "user", content: [{ type: "text", text }] },
});

async function open(path: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const response = await server.app.request(`${LOCAL}${path}`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/text\/event-stream/);
  return new SseReader(response);
}

describe("session stream", () => {
  it("pushes events another connection appends, with their seq as the event id", async () => {
    const scope = { agentId: "main", sessionId: seeded.activeId };
    const start = writer.transcripts.tail(scope, 1)[0]?.seq ?? 0;
    const stream = await open(
      `/api/agents/main/transcripts/${seeded.activeId}/stream?afterSeq=${start}`,
    );
    const appended = writer.transcripts.append(scope, say("hello from elsewhere"));
    const message = await stream.next("append");
    const { events } = JSON.parse(message.data) as {
      events: Array<{ seq: number; event: unknown }>;
    };
    expect(events.map((e) => e.seq)).toEqual([appended.seq]);
    expect(events[0]?.event).toEqual(appended.event);
    expect(message.id).toBe(String(appended.seq));
    const session = await stream.next("session");
    expect(JSON.parse(session.data).session.eventCount).toBe(appended.seq);
    await stream.cancel();
  });

  it("resumes after Last-Event-ID and sends a backlog in batches, in order", async () => {
    const scope = { agentId: "main", sessionId: seeded.activeId };
    const batch = Array.from({ length: 450 }, (_, i) => say(`line ${i}`));
    const appended = writer.transcripts.appendMany(scope, batch);
    const from = appended[99]?.seq ?? 0;
    const stream = await open(`/api/agents/main/transcripts/${seeded.activeId}/stream?afterSeq=0`, {
      "last-event-id": String(from),
    });
    const seqs: number[] = [];
    while (seqs.length < 350) {
      const { events } = JSON.parse((await stream.next("append")).data) as {
        events: Array<{ seq: number }>;
      };
      seqs.push(...events.map((e) => e.seq));
    }
    expect(seqs).toEqual(appended.slice(100).map((a) => a.seq));
    await stream.cancel();
  });

  it("hears writes made through the server itself", async () => {
    const stream = await open(`/api/agents/main/transcripts/${seeded.activeId}/stream?afterSeq=1`);
    const response = await server.app.request(
      `${LOCAL}/api/agents/main/transcripts/${seeded.activeId}/events`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ event: say("via API") }),
      },
    );
    expect(response.status).toBe(201);
    const { events } = JSON.parse((await stream.next("append")).data) as {
      events: Array<{ event: unknown }>;
    };
    expect(JSON.stringify(events)).toContain("via API");
    await stream.cancel();
  });

  it("is a 404 before any stream opens for a session that does not exist", async () => {
    const response = await server.app.request(`${LOCAL}/api/agents/main/transcripts/nope/stream`);
    expect(response.status).toBe(404);
    const bad = await server.app.request(
      `${LOCAL}/api/agents/main/transcripts/${seeded.activeId}/stream`,
      {
        headers: { "last-event-id": "-1" },
      },
    );
    expect(bad.status).toBe(400);
  });
});

describe("agent stream", () => {
  it("says `change` when another connection commits to the agent's database", async () => {
    const stream = await open("/api/agents/main/stream");
    writer.sessions.patch("main", "agent:main:new", { label: "new key" });
    const change = await stream.next("change");
    expect(JSON.parse(change.data).agentId).toBe("main");
    await stream.cancel();
  });
});

describe("closing", () => {
  it("ends open streams and stops polling", async () => {
    const stream = await open(`/api/agents/main/transcripts/${seeded.activeId}/stream`);
    await stream.next("append");
    server.close();
    await expect(stream.next("append", 2000)).rejects.toThrow(/stream ended/);
  });
});

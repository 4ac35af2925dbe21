import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import type { RunEvent } from "../run-events.js";
import { type AgentRuntime, createAgentRuntime } from "../runner.js";

interface ChatRequest {
  headers: IncomingMessage["headers"];
  body: {
    model: string;
    stream: boolean;
    messages: Array<Record<string, unknown>>;
    tools: unknown[];
  };
}

const tempDir = useTempDirs();
let server: Server;
let home: StateHome;
let runtime: AgentRuntime;
afterEach(async () => {
  await runtime?.close();
  home?.close();
  await new Promise((resolve) => server?.close(resolve));
});

function sse(chunks: unknown[]): string {
  return `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("")}data: [DONE]\n\n`;
}

/** A chat-completions endpoint: asks for read_file first, then answers with what it got back. */
function scriptedModel(requests: ChatRequest[], status = 200): Promise<string> {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => {
      raw += chunk.toString("utf8");
    });
    req.on("end", () => {
      const body = JSON.parse(raw) as ChatRequest["body"];
      requests.push({ headers: req.headers, body });
      if (status !== 200) {
        res.writeHead(status, { "content-type": "application/json" }).end('{"error":"overloaded"}');
        return;
      }
      const last = body.messages.at(-1) as { role: string; content: string };
      const stream =
        last.role === "tool"
          ? sse([
              { choices: [{ delta: { role: "assistant", content: "The note says: " } }] },
              { choices: [{ delta: { content: last.content }, finish_reason: "stop" }] },
              { choices: [], usage: { prompt_tokens: 30, completion_tokens: 6, total_tokens: 36 } },
            ])
          : sse([
              { choices: [{ delta: { role: "assistant", content: "Let me look." } }] },
              {
                choices: [
                  {
                    delta: {
                      tool_calls: [
                        {
                          index: 0,
                          id: "call_a",
                          type: "function",
                          function: { name: "read_file", arguments: "" },
                        },
                      ],
                    },
                  },
                ],
              },
              {
                choices: [
                  { delta: { tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] } },
                ],
              },
              {
                choices: [
                  {
                    delta: { tool_calls: [{ index: 0, function: { arguments: '"/notes.md"}' } }] },
                    finish_reason: "tool_calls",
                  },
                ],
              },
              { choices: [], usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 } },
            ]);
      res.writeHead(200, { "content-type": "text/event-stream" });
      // Cut mid-event: the client has to put events back together across network chunks.
      const cut = Math.floor(stream.length / 2) + 3;
      res.write(stream.slice(0, cut));
      setTimeout(() => res.end(stream.slice(cut)), 5);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`),
    ),
  );
}

function setup(): void {
  home = openStateHome({ home: tempDir() });
  home.agent("main").vfs.namespace("scratch").writeFile("/notes.md", "buy milk");
  runtime = createAgentRuntime({ home, mode: "inline" });
}

describe("OpenAiBackend", () => {
  it("streams, runs the tool the model asks for, and stores the whole exchange", async () => {
    const requests: ChatRequest[] = [];
    const baseUrl = await scriptedModel(requests);
    setup();
    const events: RunEvent[] = [];
    const backend = {
      kind: "openai" as const,
      baseUrl,
      model: "local-model",
      apiKeyEnv: "OPENAI_TEST_KEY",
    };
    // The spec names the variable; the key is read where the turn runs and never travels.
    process.env.OPENAI_TEST_KEY = "sk-test";
    const result = await runtime
      .run({
        agentId: "main",
        session: { sessionKey: "k" },
        input: "What is in my notes?",
        backend,
        onEvent: (event) => {
          events.push(event);
        },
      })
      .finally(() => {
        delete process.env.OPENAI_TEST_KEY;
      });
    expect(result).toMatchObject({
      status: "completed",
      text: "The note says: buy milk",
      usage: { input: 50, output: 11, totalTokens: 61 },
    });
    expect(requests).toHaveLength(2);
    expect(requests[0]?.headers.authorization).toBe("Bearer sk-test");
    expect(requests[0]?.body).toMatchObject({
      model: "local-model",
      stream: true,
      messages: [{ role: "user", content: "What is in my notes?" }],
    });
    expect(requests[0]?.body.tools).toHaveLength(5);
    expect(requests[1]?.body.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: "Let me look.",
        tool_calls: [
          {
            id: "call_a",
            type: "function",
            function: { name: "read_file", arguments: '{"path":"/notes.md"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "buy milk" },
    ]);
    expect(
      events
        .filter((e) => e.kind === "stream")
        .map((e) => (e as { text: string }).text)
        .join(""),
    ).toBe("Let me look.The note says: buy milk");
    const stored = home
      .agent("main")
      .transcripts.read(result.sessionId)
      .slice(1)
      .map((e) => e.event.message as Record<string, unknown>);
    expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(stored[1]).toMatchObject({
      stopReason: "toolUse",
      model: "local-model",
      content: [
        { type: "text", text: "Let me look." },
        { type: "toolCall", id: "call_a", name: "read_file", arguments: { path: "/notes.md" } },
      ],
    });
    expect(stored[2]).toMatchObject({
      toolCallId: "call_a",
      toolName: "read_file",
      isError: false,
      content: [{ type: "text", text: "buy milk" }],
    });
  });

  it("sends the earlier turns back as chat history", async () => {
    const requests: ChatRequest[] = [];
    const baseUrl = await scriptedModel(requests);
    setup();
    const params = {
      agentId: "main",
      session: { sessionKey: "k" },
      backend: { kind: "openai" as const, baseUrl, model: "m", systemPrompt: "Be brief." },
    };
    await runtime.run({ ...params, input: "first" });
    await runtime.run({ ...params, input: "second" });
    expect(requests[2]?.body.messages.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
  });

  it("an endpoint error fails the turn with E_IO", async () => {
    const baseUrl = await scriptedModel([], 503);
    setup();
    const result = await runtime.run({
      agentId: "main",
      session: { sessionKey: "k" },
      input: "x",
      backend: { kind: "openai", baseUrl, model: "m" },
    });
    expect(result).toMatchObject({ status: "failed", failure: { kind: "backend", code: "E_IO" } });
    expect(result.failure?.message).toMatch(/answered 503/);
  });
});

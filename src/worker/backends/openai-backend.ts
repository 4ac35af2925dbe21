import { StateError } from "../../db/errors.js";
import type { AgentRuntimeBackend, AssistantBlock, BackendTurn } from "../backend.js";
import type { BackendSpec } from "../backend-spec.js";
import type { TokenUsage } from "../run-events.js";
import type { ToolCall } from "../turn-tools.js";
import { type ChatMessage, toChatMessages } from "./chat-messages.js";
import { readSseData } from "./sse.js";

export type OpenAiSpec = Extract<BackendSpec, { kind: "openai" }>;

interface Completion {
  text: string;
  calls: ToolCall[];
  finishReason: string | null;
  usage: TokenUsage | null;
}

interface ChunkChoice {
  delta?: {
    content?: string | null;
    tool_calls?: Array<{
      index: number;
      id?: string;
      function?: { name?: string; arguments?: string };
    }>;
  };
  finish_reason?: string | null;
}

interface Chunk {
  choices?: ChunkChoice[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
}

function parseArguments(raw: string): Record<string, unknown> {
  try {
    const value = JSON.parse(raw === "" ? "{}" : raw) as unknown;
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : { value };
  } catch {
    // The tool then reports the missing argument, and the model can try again.
    return { unparsedArguments: raw };
  }
}

function usageOf(chunk: Chunk): TokenUsage | null {
  const usage = chunk.usage;
  if (!usage) return null;
  const input = usage.prompt_tokens ?? 0;
  const output = usage.completion_tokens ?? 0;
  return { input, output, totalTokens: usage.total_tokens ?? input + output };
}

/**
 * A model behind an OpenAI-compatible `/chat/completions` endpoint, streamed. Text deltas are
 * streamed to the parent; tool calls run through the turn's tools and their results go back to
 * the model, for at most `maxRounds` model calls per turn.
 */
export class OpenAiBackend implements AgentRuntimeBackend {
  readonly name = "openai";

  constructor(
    private readonly spec: OpenAiSpec,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  async runTurn(turn: BackendTurn): Promise<void> {
    const messages = toChatMessages(turn.context, this.spec.systemPrompt);
    for (let round = 0; round < (this.spec.maxRounds ?? 8); round++) {
      const completion = await this.complete(messages, turn);
      const content: AssistantBlock[] =
        completion.text === "" ? [] : [{ type: "text", text: completion.text }];
      for (const call of completion.calls) content.push({ type: "toolCall", ...call });
      turn.reply({
        content,
        stopReason:
          completion.calls.length > 0
            ? "toolUse"
            : completion.finishReason === "length"
              ? "length"
              : "stop",
        provider: "openai-compatible",
        model: this.spec.model,
        ...(completion.usage ? { usage: completion.usage } : {}),
      });
      if (completion.usage) turn.usage(completion.usage);
      if (completion.calls.length === 0) return;
      messages.push({
        role: "assistant",
        content: completion.text === "" ? null : completion.text,
        tool_calls: completion.calls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        })),
      });
      for (const call of completion.calls) {
        const outcome = await turn.tools.call(call);
        messages.push({ role: "tool", tool_call_id: call.id, content: outcome.output });
      }
    }
  }

  private async complete(messages: ChatMessage[], turn: BackendTurn): Promise<Completion> {
    const url = `${this.spec.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    const key = this.spec.apiKeyEnv ? this.env[this.spec.apiKeyEnv] : undefined;
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      body: JSON.stringify({
        model: this.spec.model,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        tools: turn.tools.definitions.map((tool) => ({ type: "function", function: tool })),
      }),
      signal: turn.signal,
    });
    if (!response.ok || response.body === null) {
      const text = (await response.text()).slice(0, 300);
      throw new StateError("E_IO", `model endpoint ${url} answered ${response.status}: ${text}`, {
        details: { url, status: response.status },
      });
    }
    return this.collect(response.body, turn);
  }

  private async collect(body: ReadableStream<Uint8Array>, turn: BackendTurn): Promise<Completion> {
    const completion: Completion = { text: "", calls: [], finishReason: null, usage: null };
    const partial: Array<{ id: string; name: string; args: string }> = [];
    for await (const data of readSseData(body)) {
      if (data.trim() === "[DONE]") break;
      const chunk = JSON.parse(data) as Chunk;
      completion.usage = usageOf(chunk) ?? completion.usage;
      for (const choice of chunk.choices ?? []) {
        const delta = choice.delta ?? {};
        if (delta.content) {
          completion.text += delta.content;
          turn.stream(delta.content);
        }
        for (const call of delta.tool_calls ?? []) {
          partial[call.index] ??= { id: "", name: "", args: "" };
          const slot = partial[call.index] as { id: string; name: string; args: string };
          slot.id ||= call.id ?? "";
          slot.name += call.function?.name ?? "";
          slot.args += call.function?.arguments ?? "";
        }
        completion.finishReason = choice.finish_reason ?? completion.finishReason;
      }
    }
    completion.calls = partial.map((slot, i) => ({
      id: slot.id || `call_${i}`,
      name: slot.name,
      arguments: parseArguments(slot.args),
    }));
    return completion;
  }
}

import { setTimeout as sleep } from "node:timers/promises";
import type { AgentRuntimeBackend, BackendTurn } from "../backend.js";
import type { ScriptStep } from "../backend-spec.js";

const DEFAULT_CHUNK = 16;

/** Deterministic stand-in for a token count: one token per four characters. */
function tokens(text: string): number {
  return Math.ceil(text.length / 4);
}

async function streamText(turn: BackendTurn, step: Extract<ScriptStep, { type: "text" }>) {
  const size = Math.max(1, step.chunkSize ?? DEFAULT_CHUNK);
  for (let at = 0; at < step.text.length; at += size) {
    if (at > 0 && step.delayMs) await sleep(step.delayMs, undefined, { signal: turn.signal });
    turn.stream(step.text.slice(at, at + size));
  }
  turn.reply({
    content: [{ type: "text", text: step.text }],
    stopReason: "stop",
    provider: "scripted",
    model: "script",
  });
}

/**
 * Replays a script: assistant text (streamed, then stored), tool calls (with a given result, or
 * run for real against the turn's filesystem) and pauses. The same script always stores the
 * same messages, which makes it the backend of tests, benchmarks and the demo.
 */
export class ScriptedBackend implements AgentRuntimeBackend {
  readonly name = "scripted";

  constructor(private readonly steps: readonly ScriptStep[]) {}

  async runTurn(turn: BackendTurn): Promise<void> {
    let output = 0;
    for (const [index, step] of this.steps.entries()) {
      turn.signal.throwIfAborted();
      if (step.type === "wait") {
        await sleep(step.ms, undefined, { signal: turn.signal });
      } else if (step.type === "text") {
        await streamText(turn, step);
        output += tokens(step.text);
      } else {
        const call = { id: `call_${index}`, name: step.name, arguments: step.arguments };
        turn.reply({
          content: [{ type: "toolCall", ...call }],
          stopReason: "toolUse",
          provider: "scripted",
          model: "script",
        });
        if (step.result) {
          turn.tools.record(call, {
            output: step.result.output,
            isError: step.result.isError === true,
          });
        } else {
          await turn.tools.call(call);
        }
      }
    }
    const input = tokens(turn.run.input);
    turn.usage({ input, output, totalTokens: input + output });
  }
}

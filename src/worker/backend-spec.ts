import { StateError } from "../db/errors.js";

/** One step of a scripted turn, replayed in order. */
export type ScriptStep =
  /** Assistant text, streamed in chunks of `chunkSize` characters, then stored as one message. */
  | { type: "text"; text: string; chunkSize?: number; delayMs?: number }
  /**
   * An assistant tool call, stored as a message; then its result: `result` when the script gives
   * one (replayed as is), else the tool really runs against the turn's filesystem.
   */
  | {
      type: "tool";
      name: string;
      arguments: Record<string, unknown>;
      result?: { output: string; isError?: boolean };
    }
  /** A pause (a slow model); cut short when the turn is cancelled. */
  | { type: "wait"; ms: number };

/**
 * Which agent loop runs the turn, as data so it can cross to a worker: the worker builds the
 * backend itself. A live `AgentRuntimeBackend` object can be passed instead, but only inline.
 */
export type BackendSpec =
  | { kind: "scripted"; steps: ScriptStep[] }
  | {
      kind: "openai";
      /** e.g. `http://127.0.0.1:8000/v1`; `/chat/completions` is appended. */
      baseUrl: string;
      model: string;
      /** Name of the environment variable holding the API key; the key itself never travels. */
      apiKeyEnv?: string;
      systemPrompt?: string;
      /** Model calls per turn before giving up on a tool loop (default 8). */
      maxRounds?: number;
    }
  /**
   * A backend module of your own: `url` is a `file:` URL of an ES module exporting
   * `createBackend(options)`, which returns an `AgentRuntimeBackend`.
   */
  | { kind: "module"; url: string; options?: unknown }
  /** Stands in for a live backend object that stayed in the parent (inline runs only). */
  | { kind: "live"; name: string };

// "live" is not here: it only ever stands in for an object the caller passed.
const KINDS = new Set(["scripted", "openai", "module"]);

function invalid(message: string): StateError {
  return new StateError("E_INVALID_ARGUMENT", `backend: ${message}`);
}

function checkStep(step: ScriptStep, index: number): void {
  const where = `scripted step ${index}`;
  if (step.type === "text" && typeof step.text === "string") return;
  if (step.type === "wait" && Number.isFinite(step.ms) && step.ms >= 0) return;
  if (step.type === "tool" && typeof step.name === "string" && typeof step.arguments === "object") {
    return;
  }
  throw invalid(
    `${where} must be {type:"text",text} | {type:"tool",name,arguments} | {type:"wait",ms}`,
  );
}

/** Validates a spec eagerly, so a typo fails in the caller, not later inside a worker. */
export function checkBackendSpec(spec: BackendSpec): BackendSpec {
  if (typeof spec !== "object" || spec === null || !KINDS.has(spec.kind)) {
    throw invalid(`expected kind "scripted", "openai" or "module"`);
  }
  if (spec.kind === "scripted") {
    if (!Array.isArray(spec.steps)) throw invalid("scripted backend needs steps: ScriptStep[]");
    spec.steps.forEach(checkStep);
  } else if (spec.kind === "openai") {
    if (typeof spec.baseUrl !== "string" || !/^https?:\/\//.test(spec.baseUrl)) {
      throw invalid("openai backend needs an http(s) baseUrl");
    }
    if (typeof spec.model !== "string" || spec.model === "") {
      throw invalid("openai backend needs a model");
    }
  } else if (
    spec.kind === "module" &&
    (typeof spec.url !== "string" || !spec.url.startsWith("file:"))
  ) {
    throw invalid("module backend needs a file: URL");
  }
  return spec;
}

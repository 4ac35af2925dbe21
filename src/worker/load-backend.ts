import { StateError } from "../db/errors.js";
import type { AgentRuntimeBackend } from "./backend.js";
import type { BackendSpec } from "./backend-spec.js";
import { OpenAiBackend } from "./backends/openai-backend.js";
import { ScriptedBackend } from "./backends/scripted-backend.js";
import { isLiveBackend } from "./prepared-run.js";

/** Builds the backend a spec names, on whichever side of the worker boundary runs the turn. */
export async function loadBackend(spec: BackendSpec): Promise<AgentRuntimeBackend> {
  switch (spec.kind) {
    case "scripted":
      return new ScriptedBackend(spec.steps);
    case "openai":
      return new OpenAiBackend(spec);
    case "module": {
      const module = (await import(spec.url)) as { createBackend?: unknown };
      if (typeof module.createBackend !== "function") {
        throw new StateError(
          "E_INVALID_ARGUMENT",
          `backend module ${spec.url} does not export createBackend(options)`,
        );
      }
      const backend: unknown = await module.createBackend(spec.options);
      if (!isLiveBackend(backend)) {
        throw new StateError(
          "E_INVALID_ARGUMENT",
          `createBackend of ${spec.url} did not return { name, runTurn }`,
        );
      }
      return backend;
    }
    default:
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `backend "${spec.name}" is a live object and cannot be built from data`,
      );
  }
}

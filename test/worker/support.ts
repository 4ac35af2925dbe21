import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";
import type { BackendSpec } from "../../src/worker/backend-spec.js";

/** Worker threads and run processes load compiled code: these suites need `npm run build`. */
export const WORKER_ENTRY = fileURLToPath(
  new URL("../../dist/worker/worker-entry.js", import.meta.url),
);
export const PROCESS_ENTRY = fileURLToPath(
  new URL("../../dist/worker/process-entry.js", import.meta.url),
);
const FIXTURE_BACKENDS = new URL("../fixtures/worker-backends.mjs", import.meta.url).href;

export function requireWorkerBuild(): void {
  if (!existsSync(WORKER_ENTRY) || !existsSync(PROCESS_ENTRY)) {
    throw new Error("dist/worker is missing: run `npm run build` before these tests");
  }
}

/** A backend from test/fixtures/worker-backends.mjs. */
export function fixtureBackend(
  behavior: string,
  options: Record<string, unknown> = {},
): BackendSpec {
  return { kind: "module", url: FIXTURE_BACKENDS, options: { behavior, ...options } };
}

/** A fresh temp directory per call, removed after the current test. */
export function useTempDirs(): () => string {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), "agentstate-worker-test-"));
    made.push(dir);
    return dir;
  };
}

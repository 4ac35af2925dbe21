import { randomUUID } from "node:crypto";
import { isAbsolute, resolve } from "node:path";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { checkSessionId, validateAgentId } from "../ids.js";
import type { AgentRuntimeBackend } from "./backend.js";
import { type BackendSpec, checkBackendSpec } from "./backend-spec.js";
import { findCloneBlockers } from "./clone-check.js";
import {
  checkPermissionOptions,
  type PermissionOptions,
  type PermissionProfile,
} from "./permission.js";
import type { RunBlocker, RunEvent } from "./run-events.js";

export const FILESYSTEM_MODES = ["disk", "vfs-scratch", "vfs-only"] as const;
/**
 * `disk`: file tools and exec on the host workspace, `scratch:` paths in the VFS.
 * `vfs-scratch`: the same access, but unprefixed paths go to the VFS and `workspace:` to the host.
 * `vfs-only`: the VFS and nothing else; exec runs in a projected temp directory.
 */
export type FilesystemMode = (typeof FILESYSTEM_MODES)[number];

export interface FilesystemOptions {
  /** Default `vfs-only`: a run gets host access only when asked for. */
  mode?: FilesystemMode;
  /** The host workspace directory; required by `disk` and `vfs-scratch`, refused by `vfs-only`. */
  workspace?: string;
  /** The VFS namespace of the run's scratch files (default `scratch`). */
  namespace?: string;
}

export interface PreparedFilesystem {
  mode: FilesystemMode;
  workspace: string | null;
  namespace: string;
}

/**
 * One turn as data: everything a worker needs to run it and nothing that would not survive
 * `structuredClone` (no handles, callbacks or signals). The worker opens its own connections
 * from `homePath`.
 */
export interface PreparedAgentRun {
  readonly version: 1;
  readonly runId: string;
  readonly agentId: string;
  readonly homePath: string;
  readonly session: { readonly sessionId: string; readonly sessionKey: string };
  /** The user's message for this turn. */
  readonly input: string;
  readonly filesystem: PreparedFilesystem;
  readonly permission: PermissionProfile;
  readonly timeoutMs: number;
  readonly backend: BackendSpec;
  /** Caller data for the backend (channel, policy …); structured-cloneable unless run inline. */
  readonly metadata: Readonly<Record<string, unknown>>;
}

export type RunEventHandler = (event: RunEvent) => void | Promise<void>;

/** A turn as the caller describes it, live values included. */
export interface AgentTurnParams {
  agentId: string;
  /** The routing slot; without `sessionId` the key's active session is used (started if none). */
  session: { sessionKey: string; sessionId?: string };
  input: string;
  /** A spec (crosses to workers) or a live backend object (inline only). */
  backend: BackendSpec | AgentRuntimeBackend;
  runId?: string;
  filesystem?: FilesystemOptions;
  permission?: PermissionOptions;
  /** Default 600,000 (10 minutes). */
  timeoutMs?: number;
  metadata?: Record<string, unknown>;
  /** Stays in the parent: aborting it sends the worker a cancel. */
  signal?: AbortSignal;
  /** Stays in the parent: receives the run's events in order, awaited one by one. */
  onEvent?: RunEventHandler;
}

export interface PreparedTurn {
  run: PreparedAgentRun;
  /** What cannot cross to a worker; empty when the run can. */
  blockers: RunBlocker[];
  /** The backend object when the caller passed one instead of a spec. */
  liveBackend: AgentRuntimeBackend | null;
}

export const DEFAULT_TIMEOUT_MS = 600_000;
const MAX_TIMEOUT_MS = 24 * 60 * 60 * 1000;
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const PARAM_KEYS = new Set([
  "agentId",
  "session",
  "input",
  "backend",
  "runId",
  "filesystem",
  "permission",
  "timeoutMs",
  "metadata",
  "signal",
  "onEvent",
]);

function invalid(message: string, details: Record<string, unknown> = {}): StateError {
  return new StateError("E_INVALID_ARGUMENT", message, { details });
}

export function isLiveBackend(value: unknown): value is AgentRuntimeBackend {
  return typeof (value as { runTurn?: unknown } | null)?.runTurn === "function";
}

function checkFilesystem(options: FilesystemOptions = {}): PreparedFilesystem {
  rejectUnknownOptions(options, ["mode", "workspace", "namespace"], "filesystem");
  const { mode = "vfs-only", workspace, namespace = "scratch" } = options;
  if (!FILESYSTEM_MODES.includes(mode)) {
    throw invalid(`filesystem mode must be one of ${FILESYSTEM_MODES.join(", ")}, got ${mode}`);
  }
  if (mode === "vfs-only" && workspace !== undefined) {
    throw invalid("filesystem mode vfs-only takes no workspace: it never touches the host");
  }
  if (mode !== "vfs-only" && (typeof workspace !== "string" || !isAbsolute(workspace))) {
    throw invalid(`filesystem mode ${mode} needs an absolute workspace path`);
  }
  return Object.freeze({ mode, workspace: workspace ? resolve(workspace) : null, namespace });
}

function checkRunId(runId: unknown): string {
  if (typeof runId !== "string" || !RUN_ID.test(runId)) {
    throw invalid(`runId must be 1 to 128 of A-Za-z0-9._:- (got ${JSON.stringify(runId)})`);
  }
  return runId;
}

function checkTimeout(timeoutMs: unknown): number {
  if (
    !Number.isInteger(timeoutMs) ||
    (timeoutMs as number) < 1 ||
    (timeoutMs as number) > MAX_TIMEOUT_MS
  ) {
    throw invalid(
      `timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS}, got ${String(timeoutMs)}`,
    );
  }
  return timeoutMs as number;
}

function checkSessionKey(session: AgentTurnParams["session"]): string {
  if (typeof session?.sessionKey !== "string" || session.sessionKey === "") {
    throw invalid("session.sessionKey must be a non-empty string");
  }
  return session.sessionKey;
}

export interface PrepareOptions {
  /**
   * The session id for a key when the params name none (the runtime passes the key's active
   * session). Called last, after everything else was checked, so a refused run changes nothing.
   */
  resolveSessionId?: (sessionKey: string) => string;
}

/**
 * Turns live params into a `PreparedAgentRun`. The parent-owned fields (`signal`, `onEvent`) are
 * left behind by design; anything else that cannot cross (a live backend, a callback inside
 * `metadata`) is reported in `blockers` by name, and the run can then only run inline.
 */
export function prepareAgentRun(
  params: AgentTurnParams,
  homePath: string,
  options: PrepareOptions = {},
): PreparedTurn {
  if (typeof params !== "object" || params === null) {
    throw new TypeError("Expected an AgentTurnParams object");
  }
  rejectUnknownOptions(
    params,
    PARAM_KEYS,
    "AgentTurnParams",
    (key) => `Unknown agent turn parameter: ${key}`,
  );
  if (typeof params.input !== "string") throw invalid("input must be a string");
  const liveBackend = isLiveBackend(params.backend) ? params.backend : null;
  const blockers: RunBlocker[] = [];
  if (liveBackend) blockers.push({ path: "backend", reason: "a live AgentRuntimeBackend object" });
  const metadata = params.metadata ?? {};
  blockers.push(...findCloneBlockers(metadata, "metadata"));
  const checked = {
    version: 1 as const,
    runId: checkRunId(params.runId ?? randomUUID()),
    agentId: validateAgentId(params.agentId),
    homePath: resolve(homePath),
    input: params.input,
    filesystem: checkFilesystem(params.filesystem),
    permission: checkPermissionOptions(params.permission),
    timeoutMs: checkTimeout(params.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    backend: liveBackend
      ? { kind: "live" as const, name: String(liveBackend.name) }
      : checkBackendSpec(params.backend as BackendSpec),
    metadata,
  };
  const sessionKey = checkSessionKey(params.session);
  let sessionId = params.session.sessionId;
  if (sessionId === undefined) {
    if (!options.resolveSessionId) {
      throw invalid(`session ${sessionKey} has no sessionId; pass one or resolveSessionId`);
    }
    sessionId = options.resolveSessionId(sessionKey);
  }
  const session = Object.freeze({ sessionId: checkSessionId(sessionId), sessionKey });
  const run: PreparedAgentRun = Object.freeze({ ...checked, session });
  return { run, blockers, liveBackend };
}

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type SessionInfo, SessionManager } from "@mariozechner/pi-coding-agent";
import type { AgentState } from "../../home.js";
import { AgentStateSessionManager } from "../agentstate-session-manager.js";
import { freezeClock, restoreClock, restoreIds, seedIds, setClock } from "./seeded.js";

/** One call of a script; `target` picks an existing entry (modulo their count). */
export type Op = { dt: number } & (
  | { op: "message"; role: "user" | "assistant" | "toolResult"; text: string }
  | { op: "rawMessage"; message: object }
  | { op: "thinking"; level: string }
  | { op: "model"; provider: string; modelId: string }
  | { op: "compaction"; summary: string; target: number; tokens: number; details?: unknown }
  | { op: "custom"; customType: string; data?: unknown }
  | { op: "info"; name: string }
  | { op: "customMessage"; customType: string; text: string; display: boolean; details?: unknown }
  | { op: "label"; target: number; label?: string }
  | { op: "branch"; target: number }
  | { op: "resetLeaf" }
  | { op: "branchSummary"; target: number | null; summary: string; fromHook?: boolean }
  | { op: "branchedSession"; target: number }
  | { op: "newSession" }
  | { op: "reopen" }
  | { op: "fork"; cwd: string }
);

/** What one run of a script leaves: getters after every call, and every session's bytes. */
export interface RunResult {
  /** Session ids in the order the script met them. */
  sessionIds: string[];
  snapshots: string[];
  /** JSONL per session id, for the sessions pi's file mode wrote (all of them for the adapter). */
  bytes: Map<string, string>;
  list: SessionInfo[];
}

/** Both modes behind the calls a script makes that differ between them. */
interface Side {
  manager: SessionManager;
  start(): SessionManager;
  reopen(): SessionManager;
  fork(cwd: string): SessionManager;
  bytes(sessionId: string): string | undefined;
  list(): Promise<SessionInfo[]>;
}

export const CLOCK_BASE = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
export const CWD = "/home/user/project";

function message(role: string, text: string, at: number): never {
  const content = [{ type: "text", text }];
  if (role === "user") return { role, content, timestamp: at } as never;
  if (role === "toolResult") {
    return {
      role,
      toolCallId: "call_1",
      toolName: "read",
      content,
      isError: false,
      timestamp: at,
    } as never;
  }
  return {
    role,
    content,
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet",
    usage: {
      input: 1,
      output: 2,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 3,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: at,
  } as never;
}

/** pi's file mode writes a session at its first assistant message: before, it has no file. */
function flushed(manager: SessionManager): boolean {
  return manager
    .getEntries()
    .some((e) => e.type === "message" && (e.message as { role: string }).role === "assistant");
}

function pick(manager: SessionManager, target: number): string | undefined {
  const entries = manager.getEntries();
  return entries.length === 0 ? undefined : entries[target % entries.length]?.id;
}

function apply(side: Side, op: Op, at: number): void {
  const m = side.manager;
  const target = "target" in op && op.target !== null ? pick(m, op.target) : undefined;
  switch (op.op) {
    case "message":
      m.appendMessage(message(op.role, op.text, at));
      return;
    case "rawMessage":
      m.appendMessage(op.message as never);
      return;
    case "thinking":
      m.appendThinkingLevelChange(op.level);
      return;
    case "model":
      m.appendModelChange(op.provider, op.modelId);
      return;
    case "compaction":
      m.appendCompaction(op.summary, target ?? "none", op.tokens, op.details);
      return;
    case "custom":
      m.appendCustomEntry(op.customType, op.data);
      return;
    case "info":
      m.appendSessionInfo(op.name);
      return;
    case "customMessage":
      m.appendCustomMessageEntry(op.customType, op.text, op.display, op.details);
      return;
    case "label":
      if (target) m.appendLabelChange(target, op.label);
      return;
    case "branch":
      if (target) m.branch(target);
      return;
    case "resetLeaf":
      m.resetLeaf();
      return;
    case "branchSummary":
      if (op.target === null || target)
        m.branchWithSummary(target ?? null, op.summary, undefined, op.fromHook);
      return;
    case "branchedSession":
      if (target) m.createBranchedSession(target);
      return;
    case "newSession":
      m.newSession();
      return;
    case "reopen":
      if (flushed(m)) side.manager = side.reopen();
      return;
    case "fork":
      if (flushed(m)) side.manager = side.fork(op.cwd);
      return;
  }
}

/** Everything a caller can read from a manager, as one string. */
export function snapshot(m: SessionManager): string {
  const entries = m.getEntries();
  return JSON.stringify({
    sessionId: m.getSessionId(),
    cwd: m.getCwd(),
    header: m.getHeader(),
    entries,
    tree: m.getTree(),
    branch: m.getBranch(),
    leaf: m.getLeafId(),
    leafEntry: m.getLeafEntry() ?? null,
    name: m.getSessionName() ?? null,
    context: m.buildSessionContext(),
    labels: entries.map((e) => m.getLabel(e.id) ?? null),
    children: entries.map((e) => m.getChildren(e.id).map((c) => c.id)),
    branches: entries.map((e) => m.getBranch(e.id).map((b) => b.id)),
  });
}

async function run(side: Side, script: readonly Op[], seed: number): Promise<RunResult> {
  seedIds(seed);
  freezeClock(CLOCK_BASE);
  try {
    side.manager = side.start();
    const sessionIds: string[] = [];
    const snapshots: string[] = [];
    const note = () => {
      const id = side.manager.getSessionId();
      if (!sessionIds.includes(id)) sessionIds.push(id);
      snapshots.push(snapshot(side.manager));
    };
    let at = CLOCK_BASE;
    note();
    for (const op of script) {
      at += op.dt;
      setClock(at);
      apply(side, op, at);
      note();
    }
    const bytes = new Map<string, string>();
    for (const id of sessionIds) {
      const text = side.bytes(id);
      if (text !== undefined) bytes.set(id, text);
    }
    return { sessionIds, snapshots, bytes, list: await side.list() };
  } finally {
    restoreClock();
    restoreIds();
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function sessionFile(dir: string, sessionId: string): string | undefined {
  const name = readdirSync(dir).find((f) => f.endsWith(`_${sessionId}.jsonl`));
  return name === undefined ? undefined : join(dir, name);
}

/** The script through pi's own SessionManager in file mode, in `dir`. */
export function runFileMode(dir: string, script: readonly Op[], seed: number): Promise<RunResult> {
  const side: Side = {
    manager: undefined as never,
    start: () => SessionManager.create(CWD, dir),
    reopen: () => SessionManager.open(side.manager.getSessionFile() as string, dir),
    fork: (cwd) => SessionManager.forkFrom(side.manager.getSessionFile() as string, cwd, dir),
    bytes: (id) => {
      const file = sessionFile(dir, id);
      return file && existsSync(file) ? readFileSync(file, "utf8") : undefined;
    },
    list: () => SessionManager.list(CWD, dir),
  };
  return run(side, script, seed);
}

/** The script through AgentStateSessionManager on `agent`. */
export function runAdapter(
  agent: AgentState,
  script: readonly Op[],
  seed: number,
): Promise<RunResult> {
  const side: Side = {
    manager: undefined as never,
    start: () => AgentStateSessionManager.create(agent, CWD),
    reopen: () => AgentStateSessionManager.open(agent, side.manager.getSessionId()),
    fork: (cwd) => AgentStateSessionManager.forkFrom(agent, side.manager.getSessionId(), cwd),
    bytes: (id) => {
      const lines = [...agent.transcripts.exportJsonl(id)];
      return lines.length === 0 ? undefined : lines.join("");
    },
    list: () => AgentStateSessionManager.listAll(agent),
  };
  return run(side, script, seed);
}

/**
 * The file mode's result in the adapter's names: a header's `parentSession` path becomes the
 * session id it names, and each session id (uuidv7, whose generator keeps state across runs in
 * one process) the adapter's id of the session met at the same point of the script.
 */
export function renamed(
  text: string,
  dir: string,
  from: readonly string[],
  to: readonly string[],
): string {
  let out = text;
  // A parent pi never wrote (no assistant message yet) is named by a path all the same.
  from.forEach((id) => {
    const path = new RegExp(`"${escapeRegExp(dir)}/[^"]*_${id}\\.jsonl"`, "g");
    out = out.replace(path, JSON.stringify(id));
  });
  from.forEach((id, i) => {
    out = out.replaceAll(id, to[i] as string);
  });
  return out;
}

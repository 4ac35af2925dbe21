import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentState, StateHome } from "../../home.js";

export const DAY = 24 * 60 * 60 * 1000;

/** A user message event carrying `text` (padded to `bytes` when asked). */
export function message(text: string, bytes = 0) {
  const body =
    bytes > text.length
      ? text + " lorem ipsum".repeat(Math.ceil(bytes / 12)).slice(0, bytes)
      : text;
  return {
    type: "message",
    parentId: null,
    message: { role: "user", content: [{ type: "text", text: body }] },
  };
}

/** A session of `key` started with a few events; a key's first session, else a reset of it. */
export function startSession(
  agent: AgentState,
  key: string,
  sessionId: string,
  events = 3,
  bytes = 0,
) {
  const active = agent.lifecycle.active(key);
  if (active) agent.lifecycle.reset(key, { sessionId });
  else agent.lifecycle.start(key, { sessionId });
  for (let i = 0; i < events; i++)
    agent.transcripts.append(sessionId, message(`${sessionId} ${i}`, bytes));
  return sessionId;
}

/**
 * Makes a session look idle since `at`: its row, its events, and (when it is its key's current
 * session) the entry's `lastActivityAt`. By hand, since every write path stamps the clock.
 */
export function ageSession(agent: AgentState, sessionId: string, at: number): void {
  agent.db
    .prepare(
      `UPDATE sessions SET updated_at = @at, created_at = min(created_at, @at),
         ended_at = CASE WHEN ended_at IS NULL THEN NULL ELSE @at END WHERE session_id = @id`,
    )
    .run({ at, id: sessionId });
  agent.db
    .prepare(
      `UPDATE transcript_events SET created_at = @at
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = @id)`,
    )
    .run({ at, id: sessionId });
  // A cold session's last activity is its cold row's last event: the archive's, not a hot row's.
  agent.db
    .prepare(
      `UPDATE cold_sessions SET last_created_at = @at
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = @id)`,
    )
    .run({ at, id: sessionId });
  const key = agent.db
    .prepare<{ session_key: string | null }>(
      "SELECT session_key FROM sessions WHERE session_id = ?",
    )
    .get(sessionId)?.session_key;
  if (key) {
    const entry = agent.sessions.get(key)?.entry;
    if (entry?.sessionId === sessionId) {
      agent.sessions.patch(key, (e) => ({ ...e, lastActivityAt: at }));
      agent.db
        .prepare("UPDATE session_entries SET updated_at = ? WHERE session_key = ?")
        .run(at, key);
    }
  }
}

export function writeConfig(home: string, config: unknown): void {
  writeFileSync(join(home, "agentstate.json"), JSON.stringify(config, null, 2));
}

/** Sessions of the seeded home by what should become of them under SEEDED_POLICY. */
export interface SeededHome {
  path: string;
  expectCold: string[];
  expectPrune: string[];
  /** Idle for long and otherwise eligible, but protected by the rule named. */
  protectedBy: Record<string, string>;
}

/** coldAfterDays 30, pruneAfterDays 90, keepRecent 1. */
export const SEEDED_POLICY = {
  maintenance: { mode: "enforce", coldAfterDays: 30, pruneAfterDays: 90, keepRecent: 1 },
};

/**
 * One agent `main` with a session for every rule: idle ones to move, ended and archived ones to
 * prune, one of each protection, all of them idle far past every threshold.
 */
export function seedHome(state: StateHome): SeededHome {
  const agent = state.agent("main");
  const old = Date.now() - 200 * DAY;
  const s = (key: string, id: string) => startSession(agent, `agent:main:${key}`, id);
  s("idle", "idle-1");
  // A thread's key is a key like any other: its sessions follow the same rules.
  s("discord:channel:42:thread:7", "thread-1");
  s("reset", "reset-1");
  s("reset", "reset-2");
  s("arch", "arch-1");
  s("arch", "arch-2");
  s("arch", "arch-3");
  agent.sessions.patch("agent:main:arch", (e) => ({ ...e, archivedAt: old }));
  s("fresh", "fresh-1");
  s("pinned", "pinned-1");
  s("pinned", "pinned-2");
  agent.sessions.patch("agent:main:pinned", (e) => ({ ...e, pinnedAt: old }));
  s("fork", "fork-parent");
  agent.branches.fork("fork-parent", { newSessionId: "fork-child", sessionKey: null });
  s("compact", "compact-1");
  agent.lifecycle.compact("agent:main:compact", { summary: "so far", sessionId: "compact-2" });
  s("deliver", "deliver-1");
  state.queue.enqueue("outbound", {
    id: "d1",
    payload: { text: "hi" },
    sessionKey: "agent:main:deliver",
    agentId: "main",
  });
  s("busy", "busy-1");
  state.inputs.accept("main", "agent:main:busy", {
    idempotencyKey: "m1",
    payload: "hello",
    inputId: "in-1",
  });
  state.inputs.claim("main", "agent:main:busy", "turn", { leaseMs: 3_600_000 });
  s("task", "task-1");
  state.tasks.create({
    runtime: "subagent",
    status: "running",
    agentId: "main",
    requesterSessionKey: "agent:main:task",
  });
  const all = agent.db.prepare<{ session_id: string }>("SELECT session_id FROM sessions").all();
  for (const { session_id } of all)
    if (session_id !== "fresh-1") ageSession(agent, session_id, old);
  return {
    path: state.path,
    expectCold: ["idle-1", "thread-1", "reset-2", "arch-3", "fork-child", "compact-2"],
    expectPrune: ["reset-1", "arch-1", "arch-2"],
    protectedBy: {
      "fresh-1": "active",
      "pinned-1": "pinned",
      "pinned-2": "pinned",
      "fork-parent": "fork-parent",
      "compact-1": "compaction-source",
      "deliver-1": "pending-delivery",
      "busy-1": "running",
      "task-1": "pending-task",
    },
  };
}

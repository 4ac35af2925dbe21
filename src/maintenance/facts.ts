import type { Database } from "../db/database.js";
import { processOwnerAlive } from "../db/process-owner.js";
import type { SessionFacts } from "./protection.js";

/**
 * Session keys of one agent that work in the global database still waits on. A delivery is
 * pending until it is sent or failed for good (`pending`, `sending`, and `unknown`, whose outcome
 * is still to be decided); a task until it ends, or while its outcome is still to reach its
 * requester. A row with no agent id counts for every agent: the safe side.
 */
export interface GlobalWaits {
  deliveries: ReadonlySet<string>;
  tasks: ReadonlySet<string>;
}

const PENDING_DELIVERIES = `SELECT DISTINCT session_key AS key FROM delivery_queue_entries
  WHERE status IN ('pending', 'sending', 'unknown') AND session_key IS NOT NULL
    AND (agent_id = @agentId OR agent_id IS NULL)`;

const PENDING_TASKS = `SELECT requester_session_key AS a, child_session_key AS b FROM task_runs t
  WHERE (agent_id = @agentId OR agent_id IS NULL)
    AND (status IN ('queued', 'running') OR EXISTS (SELECT 1 FROM task_delivery_state d
      WHERE d.task_id = t.task_id AND d.status = 'pending'))`;

export function readGlobalWaits(global: Database, agentId: string): GlobalWaits {
  const deliveries = global.prepare<{ key: string }>(PENDING_DELIVERIES).all({ agentId });
  const tasks = global
    .prepare<{ a: string | null; b: string | null }>(PENDING_TASKS)
    .all({ agentId });
  return {
    deliveries: new Set(deliveries.map((r) => r.key)),
    tasks: new Set(tasks.flatMap((r) => [r.a, r.b].filter((k): k is string => k !== null))),
  };
}

/**
 * Keys with a turn running: an input claimed under a lease that has not run out, or whose holder
 * process still runs (a slow turn past its lease is still a turn). A worker run records its input's
 * claim, not a row of its own, so this is the run as other processes can see it.
 */
function runningKeys(db: Database, now: number): Set<string> {
  const rows = db
    .prepare<{ key: string; until: number | null; pid: number | null; started: number | null }>(
      `SELECT session_key AS key, lease_expires_at AS until, lease_owner_pid AS pid,
         lease_owner_started AS started FROM inputs WHERE state = 'claimed'`,
    )
    .all();
  const live = rows.filter(
    (r) => (r.until ?? 0) > now || processOwnerAlive({ pid: r.pid ?? 0, started: r.started }),
  );
  return new Set(live.map((r) => r.key));
}

interface FactRow {
  session_id: string;
  session_no: number;
  session_key: string | null;
  created_at: number;
  ended: number;
  last_activity_at: number;
  archived: number;
  pinned: number;
  live: number;
  entry_running: number;
  cold: number;
  cold_bytes: number;
  events: number;
  hot_bytes: number;
  index_text: number;
  fork_parent: number;
  compaction_source: number;
}

/**
 * One row per session. Last activity: the row's update (appends, reset, end), its last event (hot
 * or the cold row's), and for the key's current session the entry's `last_activity_at` (its
 * `lastActivityAt`, `lastInteractionAt` or update). A session named as predecessor by a session
 * started with reason 'compaction' is that compaction's previous session; by any other reason
 * but 'reset', a fork's parent (`fork`, `snapshot-branch`, or a caller's own reason: the safe
 * side). `live`: the key's current session, or one not ended.
 */
const FACTS = `SELECT s.session_id, s.session_no, s.session_key, s.created_at,
    s.ended_at IS NOT NULL AS ended,
    max(s.updated_at, coalesce(
        (SELECT created_at FROM transcript_events WHERE session_no = s.session_no ORDER BY seq DESC LIMIT 1),
        c.last_created_at, 0),
      CASE WHEN e.entry_json ->> '$.sessionId' = s.session_id THEN e.last_activity_at ELSE 0 END)
      AS last_activity_at,
    coalesce(e.archived, 0) AS archived, coalesce(e.pinned, 0) AS pinned,
    (s.ended_at IS NULL OR coalesce(e.entry_json ->> '$.sessionId' = s.session_id, 0)) AS live,
    coalesce(e.status = 'running', 0) AS entry_running,
    c.session_no IS NOT NULL AS cold, coalesce(c.bytes, 0) AS cold_bytes,
    (SELECT count(*) FROM transcript_events WHERE session_no = s.session_no) AS events,
    (SELECT coalesce(sum(length(event_json) + length(event_id) + 96), 0) FROM transcript_events
      WHERE session_no = s.session_no)
    + (SELECT coalesce(sum(b.size_bytes), 0) FROM transcript_blobs b WHERE b.sha256 IN
        (SELECT sha256 FROM transcript_blob_refs WHERE session_no = s.session_no)) AS hot_bytes,
    (SELECT coalesce(sum(length(text)), 0) FROM transcript_fts WHERE rowid IN
        (SELECT id FROM transcript_events WHERE session_no = s.session_no))
    + coalesce((SELECT text_bytes FROM cold_index_claims WHERE session_no = s.session_no), 0)
      AS index_text,
    EXISTS (SELECT 1 FROM sessions f WHERE f.predecessor_id = s.session_id
      AND coalesce(f.reset_reason, '') NOT IN ('compaction', 'reset')) AS fork_parent,
    EXISTS (SELECT 1 FROM sessions f WHERE f.predecessor_id = s.session_id
      AND f.reset_reason = 'compaction') AS compaction_source
  FROM sessions s
  LEFT JOIN session_entries e ON e.session_key = s.session_key
  LEFT JOIN cold_sessions c ON c.session_no = s.session_no
  WHERE @sessionId IS NULL OR s.session_id = @sessionId
  ORDER BY s.session_no`;

/**
 * The facts of an agent's sessions (or of one, `sessionId`) at `now`. Run it inside a snapshot
 * or transaction of `db` for one consistent view. Work on a key (a running turn, a pending
 * delivery or task) protects the key's live sessions: an ended one it cannot append to.
 * Pinning protects every session of the key.
 */
export function readSessionFacts(
  db: Database,
  agentId: string,
  waits: GlobalWaits,
  now: number,
  sessionId: string | null = null,
): SessionFacts[] {
  const running = runningKeys(db, now);
  return db
    .prepare<FactRow>(FACTS)
    .all({ sessionId })
    .map((r) => {
      const key = r.session_key;
      const onKey = (set: ReadonlySet<string>) => key !== null && r.live === 1 && set.has(key);
      return {
        agentId,
        sessionId: r.session_id,
        sessionNo: r.session_no,
        sessionKey: key,
        createdAt: r.created_at,
        lastActivityAt: r.last_activity_at,
        ended: r.ended === 1,
        archived: r.archived === 1,
        cold: r.cold === 1,
        events: r.events,
        hotBytes: r.hot_bytes,
        coldBytes: r.cold_bytes,
        // The stored text; its postings add a fraction more: an estimate, as the row sizes are.
        indexBytes: r.index_text,
        pinned: r.pinned === 1,
        running: (r.live === 1 && r.entry_running === 1) || onKey(running),
        forkParent: r.fork_parent === 1,
        compactionSource: r.compaction_source === 1,
        pendingDelivery: onKey(waits.deliveries),
        pendingTask: onKey(waits.tasks),
      };
    });
}

import { lstatSync, readdirSync } from "node:fs";
import { join, relative, sep } from "node:path";

/**
 * What a legacy file is and where its records go. `target: null` kinds are reported but never
 * read into a database: config and credentials stay files, backups and temp files are left
 * alone, locks are stale writer state removed once their transcript is imported.
 */
export const LEGACY_SOURCE_KINDS = {
  "session-index": { target: "agent.session_entries", label: "session index (sessions.json)" },
  transcript: { target: "agent.transcript_events", label: "transcript (.jsonl)" },
  "transcript-archive": {
    target: "agent.transcript_events",
    label: "archived transcript (.deleted / .reset)",
  },
  "cron-jobs": { target: "global.cron_jobs", label: "cron jobs (jobs.json)" },
  "cron-jobs-state": { target: "global.cron_jobs", label: "cron job state (jobs-state.json)" },
  "cron-runs": { target: "global.cron_run_logs", label: "cron run log (runs/*.jsonl)" },
  "subagent-runs": { target: "global.subagent_runs", label: "subagent runs (runs.json)" },
  "delivery-queue": {
    target: "global.delivery_queue_entries",
    label: "queued delivery (delivery-queue/*.json)",
  },
  "agent-descriptor": { target: "agent.kv", label: "agent descriptor (descriptor.json)" },
  "agent-state": { target: "agent.kv", label: "agent state (state.json)" },
  "agent-history": { target: "agent.transcript_events", label: "agent history (history.jsonl)" },
  sidecar: { target: "global.kv", label: "small state file (JSON sidecar)" },
  lock: { target: null, label: "writer lock (removed after import)" },
  ignored: { target: null, label: "backup or temp copy (left alone)" },
  config: { target: null, label: "config (stays a file)" },
  credentials: { target: null, label: "credentials (never imported)" },
} as const;

export type LegacySourceKind = keyof typeof LEGACY_SOURCE_KINDS;

export interface LegacySource {
  kind: LegacySourceKind;
  /** Path relative to the home, with `/` separators. */
  path: string;
  agentId: string | null;
  bytes: number;
  mtimeMs: number;
  /** Set when the file cannot be a source as it is (a symlink, not a regular file). */
  refused: string | null;
}

const TRANSCRIPT_ARCHIVE = /\.jsonl\.(deleted|reset)\.[^/]+$/;
const LEFTOVER =
  /(\.bak(\.\d+)?|\.backup|\.full_backup|\.before_[a-z_]+|\.tmp(-[^/]*)?|\.\d+\.[0-9a-f]+\.tmp|\.migrated(\.\d+)?)$/;
const CONFIG_FILE = /^(openclaw|clawdbot|moltbot)\.json$/;
const SIDECARS = new Set([
  "update-check.json",
  "exec-approvals.json",
  "devices/paired.json",
  "devices/pending.json",
  "nodes/paired.json",
  "nodes/pending.json",
  "settings/tts.json",
  "settings/voicewake.json",
  "settings/voicewake-routing.json",
  "bindings/current-conversations.json",
  "tui/last-session.json",
  "commitments/commitments.json",
  "session-toggles.json",
  "device-pair-notify.json",
]);
/** Durable outbound queues: one JSON file per entry, dead letters under `failed/`. */
const DELIVERY_QUEUE_DIRS: Record<string, string> = {
  "delivery-queue": "outbound-delivery",
  "session-delivery-queue": "session-delivery",
};
const CREDENTIAL_DIRS = new Set(["credentials", "identity", "push"]);

function classifySessionsDir(name: string): LegacySourceKind | null {
  if (name === "sessions.json") return "session-index";
  if (name.endsWith(".lock")) return "lock";
  if (name.endsWith(".jsonl")) return "transcript";
  if (TRANSCRIPT_ARCHIVE.test(name)) return "transcript-archive";
  if (LEFTOVER.test(name)) return "ignored";
  return null;
}

function classifyAgentFile(parts: readonly string[]): LegacySourceKind | null {
  const rest = parts.slice(2).join("/");
  if (parts[2] === "sessions" && parts.length === 4) return classifySessionsDir(parts[3] as string);
  if (rest === "agent/auth-profiles.json") return "credentials";
  if (rest === "descriptor.json") return "agent-descriptor";
  if (rest === "state.json") return "agent-state";
  if (rest === "history.jsonl") return "agent-history";
  if (parts.length === 3 && LEFTOVER.test(rest)) return "ignored";
  return null;
}

function classifyCron(parts: readonly string[]): LegacySourceKind | null {
  const name = parts[parts.length - 1] as string;
  if (parts.length === 2) {
    if (name === "jobs.json") return "cron-jobs";
    if (name === "jobs-state.json") return "cron-jobs-state";
    return LEFTOVER.test(name) || name.startsWith("jobs.json.") ? "ignored" : null;
  }
  if (parts.length === 3 && parts[1] === "runs")
    return name.endsWith(".jsonl") ? "cron-runs" : null;
  return null;
}

/** The queue a legacy delivery file belongs to, and whether it is a dead letter. */
export function deliveryQueueOf(relPath: string): { queue: string; failed: boolean } | null {
  const parts = relPath.split("/");
  const queue = DELIVERY_QUEUE_DIRS[parts[0] as string];
  return queue ? { queue, failed: parts.length === 3 && parts[1] === "failed" } : null;
}

export function classifyLegacyPath(
  relPath: string,
): { kind: LegacySourceKind; agentId: string | null } | null {
  const parts = relPath.split("/");
  const top = parts[0] as string;
  if (top === "agents" && parts.length >= 3) {
    const kind = classifyAgentFile(parts);
    return kind ? { kind, agentId: parts[1] as string } : null;
  }
  if (top === "sessions" && parts.length === 2) {
    const kind = classifySessionsDir(parts[1] as string);
    return kind ? { kind, agentId: "main" } : null;
  }
  if (top === "cron") {
    const kind = classifyCron(parts);
    return kind ? { kind, agentId: null } : null;
  }
  if (relPath === "subagents/runs.json") return { kind: "subagent-runs", agentId: null };
  if (DELIVERY_QUEUE_DIRS[top] && relPath.endsWith(".json")) {
    const inFailed = parts.length === 3 && parts[1] === "failed";
    if (parts.length === 2 || inFailed) return { kind: "delivery-queue", agentId: null };
  }
  if (SIDECARS.has(relPath)) return { kind: "sidecar", agentId: null };
  if (CREDENTIAL_DIRS.has(top) && parts.length > 1) return { kind: "credentials", agentId: null };
  if (parts.length === 1 && CONFIG_FILE.test(top)) return { kind: "config", agentId: null };
  if (parts.length === 1 && /^(openclaw|clawdbot|moltbot)\.json\./.test(top))
    return { kind: "ignored", agentId: null };
  return null;
}

/** Folders that hold legacy sources, and the kind of source each would hold. */
function sourceFolderKind(relPath: string): LegacySourceKind | null {
  const parts = relPath.split("/");
  const top = parts[0] as string;
  if (top === "agents" && (parts.length === 2 || (parts.length === 3 && parts[2] === "sessions")))
    return "transcript";
  if (parts.length === 1 && top === "sessions") return "transcript";
  if (top === "cron" && parts.length <= 2) return parts.length === 1 ? "cron-jobs" : "cron-runs";
  if (parts.length === 1 && top === "subagents") return "subagent-runs";
  if (DELIVERY_QUEUE_DIRS[top] && parts.length <= 2) return "delivery-queue";
  return null;
}

function agentOf(relPath: string): string | null {
  const parts = relPath.split("/");
  if (parts[0] === "agents") return parts[1] ?? null;
  return parts[0] === "sessions" ? "main" : null;
}

const SKIPPED_TOP_DIRS = new Set([
  "state",
  "backups",
  "node_modules",
  ".git",
  "workspace",
  "media",
  "logs",
]);
const MAX_DEPTH = 4;

/**
 * Lists the legacy files under a home, read-only. Symlinks are never followed: one where a source
 * is expected is listed as refused. The home's own databases and backups are not sources.
 */
export function discoverLegacySources(home: string): LegacySource[] {
  const found: LegacySource[] = [];
  const walk = (dir: string, depth: number): void => {
    let entries: string[];
    try {
      entries = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of entries) {
      if (depth === 0 && SKIPPED_TOP_DIRS.has(name)) continue;
      const full = join(dir, name);
      const rel = relative(home, full).split(sep).join("/");
      const stat = lstatSync(full);
      if (stat.isDirectory()) {
        if (depth < MAX_DEPTH) walk(full, depth + 1);
        continue;
      }
      const folderKind = stat.isSymbolicLink() ? sourceFolderKind(rel) : null;
      if (folderKind !== null) {
        // A linked folder would be skipped in silence: its sources are never read, so say so.
        found.push({
          kind: folderKind,
          path: rel,
          agentId: agentOf(rel),
          bytes: 0,
          mtimeMs: Math.trunc(stat.mtimeMs),
          refused: "is a symbolic link to a folder of legacy state; links are never followed",
        });
        continue;
      }
      const hit = classifyLegacyPath(rel);
      if (!hit) continue;
      const refused = stat.isSymbolicLink()
        ? "is a symbolic link; links are never followed"
        : stat.isFile()
          ? null
          : "is not a regular file";
      found.push({
        ...hit,
        path: rel,
        bytes: stat.size,
        mtimeMs: Math.trunc(stat.mtimeMs),
        refused,
      });
    }
  };
  walk(home, 0);
  return found;
}

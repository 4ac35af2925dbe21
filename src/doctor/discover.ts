import { closeSync, lstatSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";
import { join, relative, sep } from "node:path";

/**
 * What a legacy file is, for the migration. `import: false` kinds are reported but never read
 * into a database: config and credentials stay files, locks are stale writer state.
 */
export const LEGACY_SOURCE_KINDS = {
  "session-index": { import: true, label: "session index (sessions.json)" },
  transcript: { import: true, label: "transcript (.jsonl)" },
  "transcript-archive": { import: true, label: "archived transcript (.deleted / .reset)" },
  "cron-jobs": { import: true, label: "cron jobs (jobs.json)" },
  "cron-jobs-state": { import: true, label: "cron job state (jobs-state.json)" },
  "cron-runs": { import: true, label: "cron run log (runs/*.jsonl)" },
  "subagent-runs": { import: true, label: "subagent runs (runs.json)" },
  "agent-descriptor": { import: true, label: "agent descriptor (descriptor.json)" },
  "agent-state": { import: true, label: "agent state (state.json)" },
  "agent-history": { import: true, label: "agent history (history.jsonl)" },
  lock: { import: false, label: "writer lock (ignored)" },
  config: { import: false, label: "config (stays a file)" },
  credentials: { import: false, label: "credentials (never imported)" },
} as const;

export type LegacySourceKind = keyof typeof LEGACY_SOURCE_KINDS;

export interface LegacySource {
  kind: LegacySourceKind;
  /** Path relative to the home, with `/` separators. */
  path: string;
  agentId: string | null;
  bytes: number;
  /** Lines (JSONL) or entries (JSON index/registry); null when unreadable or not counted. */
  records: number | null;
}

const TRANSCRIPT_ARCHIVE = /\.jsonl\.(deleted|reset)\.[^/]+$/;
const CONFIG_FILE = /^(openclaw|clawdbot|moltbot)\.json(\.bak(\.\d+)?)?$/;

function classifyAgentFile(parts: string[]): LegacySourceKind | null {
  // parts: agents/<id>/...
  const rest = parts.slice(2).join("/");
  const name = parts[parts.length - 1] ?? "";
  if (rest === "sessions/sessions.json") return "session-index";
  if (parts[2] === "sessions" && parts.length === 4) {
    if (name.endsWith(".jsonl.lock")) return "lock";
    if (name.endsWith(".jsonl")) return "transcript";
    if (TRANSCRIPT_ARCHIVE.test(name)) return "transcript-archive";
  }
  if (rest === "agent/auth-profiles.json") return "credentials";
  if (rest === "descriptor.json") return "agent-descriptor";
  if (rest === "state.json") return "agent-state";
  if (rest === "history.jsonl") return "agent-history";
  return null;
}

function classify(relPath: string): { kind: LegacySourceKind; agentId: string | null } | null {
  const parts = relPath.split("/");
  if (parts[0] === "agents" && parts.length >= 3) {
    const kind = classifyAgentFile(parts);
    return kind ? { kind, agentId: parts[1] ?? null } : null;
  }
  if (relPath === "sessions/sessions.json") return { kind: "session-index", agentId: "main" };
  if (relPath === "cron/jobs.json") return { kind: "cron-jobs", agentId: null };
  if (relPath === "cron/jobs-state.json") return { kind: "cron-jobs-state", agentId: null };
  if (
    parts[0] === "cron" &&
    parts[1] === "runs" &&
    parts.length === 3 &&
    relPath.endsWith(".jsonl")
  ) {
    return { kind: "cron-runs", agentId: null };
  }
  if (relPath === "subagents/runs.json") return { kind: "subagent-runs", agentId: null };
  if (parts.length === 1 && CONFIG_FILE.test(relPath)) return { kind: "config", agentId: null };
  if (parts[0] === "credentials" || parts[0] === "identity") {
    return { kind: "credentials", agentId: null };
  }
  return null;
}

/** Counts newline-terminated non-blank lines plus a final unterminated one, in bounded memory. */
export function countJsonlRecords(path: string): number {
  const fd = openSync(path, "r");
  const chunk = Buffer.alloc(1 << 16);
  let count = 0;
  let lineHasContent = false;
  try {
    for (;;) {
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      for (let i = 0; i < read; i++) {
        const byte = chunk[i];
        if (byte === 0x0a) {
          if (lineHasContent) count++;
          lineHasContent = false;
        } else if (byte !== 0x20 && byte !== 0x0d && byte !== 0x09) {
          lineHasContent = true;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return lineHasContent ? count + 1 : count;
}

function countJsonRecords(path: string, kind: LegacySourceKind): number | null {
  const text = readFileSync(path, "utf8");
  if (text.trim() === "") return 0;
  const doc = JSON.parse(text) as Record<string, unknown>;
  if (kind === "cron-jobs") return Array.isArray(doc.jobs) ? doc.jobs.length : null;
  if (kind === "subagent-runs" || kind === "cron-jobs-state") {
    const map = kind === "subagent-runs" ? doc.runs : doc.jobs;
    return map && typeof map === "object" ? Object.keys(map).length : null;
  }
  if (kind === "session-index") {
    const agents = doc.agents;
    const isVersioned = typeof doc.version === "number" && agents && typeof agents === "object";
    return Object.keys(isVersioned ? (agents as object) : doc).length;
  }
  return 1;
}

function countRecords(path: string, kind: LegacySourceKind): number | null {
  if (!LEGACY_SOURCE_KINDS[kind].import) return null;
  try {
    return path.endsWith(".jsonl") || TRANSCRIPT_ARCHIVE.test(path)
      ? countJsonlRecords(path)
      : countJsonRecords(path, kind);
  } catch {
    // Unreadable or unparseable: the plan reports it as a problem; discovery only lists it.
    return null;
  }
}

const SKIPPED_TOP_DIRS = new Set(["state", "backups", "node_modules", ".git"]);

/**
 * Lists the legacy files under a home, read-only. Symlinks are never followed, and the home's own
 * databases and backups are not legacy sources.
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
      const full = join(dir, name);
      const rel = relative(home, full).split(sep).join("/");
      if (depth === 0 && SKIPPED_TOP_DIRS.has(name)) continue;
      const stat = lstatSync(full);
      if (stat.isDirectory()) {
        if (depth < 5) walk(full, depth + 1);
        continue;
      }
      if (!stat.isFile()) continue;
      const hit = classify(rel);
      if (!hit) continue;
      found.push({ ...hit, path: rel, bytes: stat.size, records: countRecords(full, hit.kind) });
    }
  };
  walk(home, 0);
  return found;
}

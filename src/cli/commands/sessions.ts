import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import { SESSION_SORT_KEYS, type SessionSortKey } from "../../stores/agent/session-query.js";
import type {
  SessionEntry,
  SessionEntryData,
  SessionListOptions,
} from "../../stores/agent/session-store.js";
import type { SessionInfo } from "../../stores/agent/transcript-rows.js";
import type { JsonValue } from "../../stores/json.js";
import {
  addAgentOption,
  addExamples,
  addHomeOption,
  addJsonOption,
  agentOf,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withReadHome,
} from "../common.js";
import { formatBytes, moreLine, printJson, renderTable, shellArg } from "../output.js";
import { flatten, outputWidth, sanitize, truncate } from "../render/style.js";

interface AgentOptions extends HomeOptions, JsonOption {
  agent?: string;
}

interface ListOptions extends AgentOptions {
  prefix?: string;
  since?: string;
  limit: string;
  cursor?: string;
  full?: boolean;
  status?: string;
  channel?: string;
  model?: string;
  label?: string;
  parent?: string;
  archived?: string;
  pinned?: string;
  sort?: string;
}

/** `yes`/`no` (also true/false, 1/0) for the archived and pinned filters. */
function parseYesNo(flag: string, text: string | undefined): boolean | undefined {
  if (text === undefined) return undefined;
  if (["yes", "true", "1"].includes(text)) return true;
  if (["no", "false", "0"].includes(text)) return false;
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `${flag} must be yes or no, got ${JSON.stringify(text)}`,
  );
}

function sortArg(sort: string | undefined): string {
  return sort === undefined || sort === "updated" ? "" : `--sort ${shellArg(sort)} `;
}

function listQuery(options: ListOptions): SessionListOptions {
  return {
    prefix: options.prefix,
    updatedSince: options.since === undefined ? undefined : parseSince(options.since),
    limit: parseInteger("--limit", options.limit, 1, 1000),
    cursor: options.cursor,
    status: options.status,
    channel: options.channel,
    model: options.model,
    label: options.label,
    parentSessionKey: options.parent,
    archived: parseYesNo("--archived", options.archived),
    pinned: parseYesNo("--pinned", options.pinned),
    sort: options.sort as SessionSortKey | undefined,
  };
}

/** Unix milliseconds as digits, else anything `Date.parse` reads (ISO 8601). */
function parseSince(text: string): number {
  const ms = /^-?\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isSafeInteger(ms)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `--since must be an ISO 8601 time or Unix milliseconds, got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

/** A subcommand that reads one agent: `--agent` first in its help, `--home` and `--json` last. */
function agentCommand(
  parent: Command,
  usage: string,
  description: string,
  options: (command: Command) => Command = (command) => command,
): Command {
  const command = addAgentOption(
    parent.command(usage).description(description),
    "the agent whose sessions to read",
  );
  options(command);
  addHomeOption(command);
  return addJsonOption(command);
}

/** The first of `paths` (dotted, one level deep) that holds a non-empty string. */
function pick(entry: SessionEntryData, ...paths: string[]): string {
  for (const path of paths) {
    const [head = "", tail] = path.split(".");
    const value: JsonValue | undefined = entry[head];
    const inner =
      tail === undefined || typeof value !== "object" || value === null || Array.isArray(value)
        ? value
        : value[tail];
    if (typeof inner === "string" && inner !== "") return sanitize(inner);
  }
  return "-";
}

function modelOf(entry: SessionEntryData): string {
  const model = pick(entry, "model", "modelOverride");
  const provider = pick(entry, "modelProvider", "providerOverride");
  return provider === "-" || model === "-" ? model : `${provider}/${model}`;
}

function renderEntries(entries: readonly SessionEntry[], full: boolean): string {
  return renderTable(
    entries,
    [
      { header: "KEY", value: (e) => sanitize(e.sessionKey) },
      { header: "SESSION", value: (e) => pick(e.entry, "sessionId") },
      { header: "UPDATED", value: (e) => new Date(e.updatedAt).toISOString() },
      { header: "CHAT", value: (e) => pick(e.entry, "chatType", "origin.chatType") },
      {
        header: "CHANNEL",
        value: (e) =>
          pick(e.entry, "channel", "lastChannel", "deliveryContext.channel", "origin.provider"),
      },
      { header: "MODEL", value: (e) => modelOf(e.entry) },
      {
        header: "LABEL",
        value: (e) => pick(e.entry, "label", "displayName", "subject", "origin.label"),
        max: 40,
      },
    ],
    { full },
  );
}

// Legacy entries name their Unix-ms times `*At` (updatedAt, memoryFlushAt …).
const PLAUSIBLE_MS = { min: 1e11, max: 1e14 };

function formatField(key: string, value: JsonValue, width: number): string {
  if (typeof value === "string") return truncate(flatten(sanitize(value)), width);
  if (
    typeof value === "number" &&
    key.endsWith("At") &&
    value > PLAUSIBLE_MS.min &&
    value < PLAUSIBLE_MS.max
  ) {
    return `${value} (${new Date(value).toISOString()})`;
  }
  if (value === null || typeof value !== "object") return String(value);
  const json = sanitize(JSON.stringify(value));
  if (json.length <= width) return json;
  // Skill and prompt snapshots run to tens of KB: say what is there, `--json` prints it.
  const size = formatBytes(Buffer.byteLength(json));
  return Array.isArray(value)
    ? `[…] ${value.length} items, ${size}`
    : `{…} ${Object.keys(value).length} fields, ${size}`;
}

function renderEntry(entry: SessionEntry | undefined, key: string): string[] {
  if (!entry) return [`key: ${sanitize(key)} (no entry; only its sessions remain)`];
  const fields: Array<[string, string]> = [
    ["key", sanitize(entry.sessionKey)],
    ["version", String(entry.version)],
    ["updated", new Date(entry.updatedAt).toISOString()],
  ];
  for (const [name, value] of Object.entries(entry.entry)) {
    fields.push([sanitize(name), formatField(name, value, Math.max(40, outputWidth() - 26))]);
  }
  const pad = Math.min(24, Math.max(...fields.map(([name]) => name.length)) + 1);
  return fields.map(([name, value]) => `${`${name}:`.padEnd(pad)} ${value}`);
}

function renderHistory(history: readonly SessionInfo[], activeId: unknown): string {
  const time = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());
  return renderTable(history, [
    { header: "", value: (s) => (s.sessionId === activeId ? "*" : "") },
    { header: "SESSION", value: (s) => sanitize(s.sessionId) },
    { header: "CREATED", value: (s) => time(s.createdAt) },
    { header: "ENDED", value: (s) => time(s.endedAt) },
    { header: "REASON", value: (s) => sanitize(s.resetReason ?? "-") },
    { header: "EVENTS", value: (s) => s.eventCount, align: "right" },
  ]);
}

function registerList(sessions: Command): void {
  agentCommand(
    sessions,
    "list",
    "list an agent's session entries, most recently updated first unless --sort says otherwise",
    (command) =>
      command
        .option("--prefix <text>", "only session keys starting with this text (no wildcards)")
        .option("--since <time>", "only entries updated at or after this ISO time or Unix ms")
        .option("--status <text>", "only entries with this status (running, done, failed, timeout)")
        .option("--channel <text>", "only entries of this channel (channel, else lastChannel)")
        .option("--model <text>", "only entries that ran this model (the entry's model field)")
        .option("--label <text>", "only entries with exactly this label")
        .option("--parent <key>", "only entries spawned by this session key")
        .option("--archived <yes|no>", "only archived entries (yes) or only the others (no)")
        .option("--pinned <yes|no>", "only pinned entries (yes) or only the others (no)")
        .option(
          "--sort <key>",
          `order by ${SESSION_SORT_KEYS.join(", ")} (default updated); always descending: newest first, text Z to A, entries without the field last`,
        )
        .option("--limit <n>", "at most this many entries per page (1 to 1000)", "50")
        .option("--cursor <cursor>", "the next-page cursor printed by the previous page")
        .option("--full", "show labels whole instead of cut to 40 characters with …")
        .addHelpText(
          "after",
          "\nExamples:\n  agentstate sessions list --limit 20\n  agentstate sessions list --agent main --prefix agent:main:telegram: --since 2026-03-01\n  agentstate sessions list --agent main --cursor <the cursor after more:>\n  agentstate sessions list --status failed --archived no --sort activity\n\nWhen more entries follow, the last line is `more: --cursor <cursor>`.",
        ),
  ).action((options: ListOptions) => {
    const query = listQuery(options);
    const page = withReadHome(options, (home) => agentOf(home, options.agent).sessions.list(query));
    if (options.json) {
      printJson(page);
      return;
    }
    if (page.entries.length === 0) process.stdout.write("no session entries\n");
    else process.stdout.write(`${renderEntries(page.entries, options.full === true)}\n`);
    if (page.nextCursor !== null)
      // A cursor is valid only with its sort, so the hint carries it.
      process.stdout.write(moreLine(`${sortArg(query.sort)}--cursor ${shellArg(page.nextCursor)}`));
  });
}

function registerShow(sessions: Command): void {
  agentCommand(
    sessions,
    "show <sessionKey>",
    "show a session entry and every session its key has had, oldest first",
    (command) =>
      addExamples(command, [
        "agentstate sessions show agent:main:main",
        "agentstate sessions show agent:research:main --agent research --json",
      ]),
  ).action((key: string, options: AgentOptions) => {
    const { agentId, entry, history } = withReadHome(options, (home) => {
      const agent = agentOf(home, options.agent);
      const { agentId } = agent;
      return { agentId, entry: agent.sessions.get(key), history: agent.lifecycle.list(key) };
    });
    if (!entry && history.length === 0) {
      const details = { agentId, sessionKey: key };
      const message = `no session key ${JSON.stringify(key)} for agent ${agentId}`;
      throw new StateError("E_NOT_FOUND", message, { details });
    }
    if (options.json) {
      printJson({ entry: entry ?? null, history });
      return;
    }
    const lines = renderEntry(entry, key);
    lines.push("", "sessions (oldest first; * = the one the entry points at):");
    lines.push(history.length === 0 ? "(none)" : renderHistory(history, entry?.entry.sessionId));
    process.stdout.write(`${lines.join("\n")}\n`);
  });
}

export function registerSessions(program: Command): void {
  const sessions = program
    .command("sessions")
    .description("inspect an agent's session entries (routing keys) and their session history");
  addExamples(sessions, [
    "agentstate sessions list --limit 20",
    "agentstate sessions show agent:main:main --agent main",
  ]);
  registerList(sessions);
  registerShow(sessions);
}

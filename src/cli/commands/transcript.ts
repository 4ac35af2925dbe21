import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { isStateError, StateError } from "../../db/errors.js";
import type { StateHome } from "../../home.js";
import type { SearchHit } from "../../stores/agent/transcript-search.js";
import type { SessionScope } from "../../stores/agent/transcript-store.js";
import { searchTerms } from "../../transcript/fts-query.js";
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
import { fetchPage, largerLimit, moreLine, printJson, renderTable } from "../output.js";
import { renderConversationPage } from "../render/conversation.js";
import {
  createStyle,
  formatTime,
  highlight,
  outputWidth,
  sanitize,
  shouldColor,
} from "../render/style.js";

interface ShowOptions extends HomeOptions, JsonOption {
  agent?: string;
  limit: string;
  after: string;
  full?: boolean;
}

interface ExportOptions extends HomeOptions {
  agent?: string;
  out?: string;
  force?: boolean;
}

interface SearchOptions extends HomeOptions, JsonOption {
  agent?: string;
  session?: string;
  limit: string;
}

interface ListOptions extends HomeOptions, JsonOption {
  agent?: string;
  limit: string;
}

const SHOW_EXAMPLES = `
Examples:
  agentstate transcript show <session-id>
  agentstate transcript show <session-id> --agent main --full | less -R
  agentstate transcript show <session-id> --agent main --after 1000 --limit 200

Long tool results, arguments and outputs are cut with …; the last lines say how many and
how to see them whole (--full), and the --after SEQ that shows the next events.`;

function registerShow(transcript: Command): void {
  const command = transcript
    .command("show <sessionId>")
    .description("print a session's conversation: messages, tool calls and results, compactions");
  addAgentOption(command, "the agent that owns the session")
    .option("--limit <n>", "at most this many events (1 to 10000)", "1000")
    .option("--after <seq>", "only events after this seq, to page on from a previous view", "0")
    .option("--full", "show tool results, arguments, thinking and outputs whole, not cut with …")
    .addHelpText("after", SHOW_EXAMPLES);
  addHomeOption(command);
  addJsonOption(command);
  command.action((sessionId: string, options: ShowOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, 10_000);
    const afterSeq = parseInteger("--after", options.after, 0, Number.MAX_SAFE_INTEGER);
    const { session, events } = withReadHome(options, (home) => {
      const agent = agentOf(home, options.agent);
      // Looked up first: reading a session that does not exist would print nothing and exit 0.
      const session = agent.lifecycle.get(sessionId);
      return { session, events: agent.transcripts.read(sessionId, { afterSeq, limit }) };
    });
    if (options.json) {
      printJson(events.map(({ seq, event }) => ({ seq, event })));
      return;
    }
    const color = shouldColor();
    const full = options.full === true;
    const { text, cuts } = renderConversationPage(events, { color, width: outputWidth(), full });
    const lastSeq = events.at(-1)?.seq ?? afterSeq;
    const lines = text === "" ? [`no events after seq ${afterSeq}`] : [text];
    const notes: string[] = [];
    if (cuts > 0) notes.push(`${cuts} texts cut to fit (…): --full shows them whole`);
    if (lastSeq < session.eventCount) {
      notes.push(`… ${session.eventCount - lastSeq} more events: --after ${lastSeq}`);
    }
    if (notes.length > 0) lines.push("", ...notes.map((note) => createStyle(color).dim(note)));
    process.stdout.write(`${lines.join("\n")}\n`);
  });
}

const FILE_PROBLEMS: Record<string, string> = {
  ENOENT: "its directory does not exist",
  ENOTDIR: "a parent is not a directory",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "it is a directory",
  EROFS: "read-only file system",
};

/** Maps a file-system failure to an error a user can act on, naming their file (not the temp). */
function fileError(error: unknown, path: string): unknown {
  if (error instanceof StateError) return error;
  const code = (error as NodeJS.ErrnoException).code ?? "";
  if (code === "EEXIST") return refuseOverwrite(path);
  const problem = FILE_PROBLEMS[code];
  const reason = problem ?? (error instanceof Error ? error.message : String(error));
  return new StateError(problem ? "E_PATH" : "E_IO", `cannot write ${path}: ${reason}`, {
    cause: error,
    details: { path, code },
  });
}

function refuseOverwrite(path: string): StateError {
  return new StateError("E_CONFLICT", `${path} already exists; pass --force to overwrite it`, {
    details: { path },
  });
}

function writeAll(fd: number, text: string | Uint8Array): void {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done);
}

/** Moves the finished temp file to `path`; see `writeExport`. */
function publish(temp: string, path: string, force: boolean): void {
  if (force) {
    renameSync(temp, path);
    return;
  }
  try {
    linkSync(temp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST" || existsSync(path)) {
      throw refuseOverwrite(path);
    }
    // Some file systems (FAT, some network mounts) have no hard links: check, then rename.
    renameSync(temp, path);
  }
}

/**
 * Writes the lines to a private temp file beside `target`, then publishes it whole: a failure
 * leaves no half-written export. Without `force`, a hard link is the publish step, because
 * `link` (unlike `rename`) refuses to replace a file that appeared in the meantime.
 */
export function writeExport(
  lines: Iterable<string | Uint8Array>,
  target: string,
  force: boolean,
): void {
  const path = resolve(target);
  if (!force && existsSync(path)) throw refuseOverwrite(path);
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  let fd: number | undefined;
  try {
    // 0600: a transcript holds whatever the user and the tools said.
    fd = openSync(temp, "wx", 0o600);
    for (const line of lines) writeAll(fd, line);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    publish(temp, path, force);
  } catch (error) {
    throw fileError(error, path);
  } finally {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
  }
}

/** Streams to stdout in chunks of about 64 KiB rather than one write per event. */
function writeStdout(lines: Iterable<string>): void {
  let chunk = "";
  for (const line of lines) {
    chunk += line;
    if (chunk.length >= 65_536) {
      process.stdout.write(chunk);
      chunk = "";
    }
  }
  if (chunk !== "") process.stdout.write(chunk);
}

// check-bans: allow a file name users pick for an export, not a store path
const EXPORT_FILE = "session.jsonl";

function registerExport(transcript: Command): void {
  const command = transcript
    .command("export <sessionId>")
    .description("write a session in the legacy JSONL format, one event per line");
  addAgentOption(command, "the agent that owns the session")
    .option("--out <file>", "write to this file (mode 0600) instead of stdout")
    .option("--force", "replace the --out file when it exists");
  addExamples(command, [
    `agentstate transcript export <session-id> > ${EXPORT_FILE}`,
    `agentstate transcript export <session-id> --agent research --out ${EXPORT_FILE}`,
    `agentstate transcript export <session-id> --out ${EXPORT_FILE} --force`,
  ]);
  addHomeOption(command);
  command.action((sessionId: string, options: ExportOptions) => {
    withReadHome(options, (home) => {
      const agent = agentOf(home, options.agent);
      agent.lifecycle.get(sessionId);
      const lines = agent.transcripts.exportJsonl(sessionId);
      if (options.out === undefined) writeStdout(lines);
      else writeExport(lines, options.out, options.force === true);
    });
  });
}

export function renderHits(hits: readonly SearchHit[]): string {
  const style = createStyle(shouldColor());
  return hits
    .map((hit) => {
      const where = `${sanitize(hit.agentId)}  ${sanitize(hit.sessionId)}  #${hit.seq}`;
      const what = `${sanitize(hit.role ?? hit.eventType)}  ${formatTime(hit.timestamp)}`;
      const head = `${style.cyan(where)}  ${style.dim(what)}`;
      return `${head}\n    ${highlight(hit.snippet, hit.highlights, style)}`;
    })
    .join("\n");
}

/** A search in a session that is not there is a mistake to report, not an empty result. */
function requireSession(home: StateHome, sessionId: string, agentId: string | undefined): void {
  const agents = agentId ? [agentId] : home.listAgents().map((a) => a.agentId);
  for (const id of agents) {
    try {
      home.agent(id, { create: false }).lifecycle.get(sessionId);
      return;
    } catch (error) {
      if (!isStateError(error, "E_NOT_FOUND") || agentId !== undefined) throw error;
    }
  }
  throw new StateError("E_NOT_FOUND", `no session ${sessionId} in any agent of the home`, {
    details: { sessionId },
  });
}

function registerSearch(transcript: Command): void {
  const command = transcript
    .command("search <query...>")
    .description(
      "full-text search of messages, tool calls and results, errors and summaries, best matches first; every word required, `word*` a prefix, CJK words found inside unspaced text",
    )
    .option("--agent <id>", "only this agent (default: every agent)")
    .option("--session <id>", "only this session")
    .option("--limit <n>", "at most this many hits (1 to 500)", "20");
  addExamples(command, [
    "agentstate transcript search invoice overdue",
    "agentstate transcript search 'deplo*' 销售数据",
    'agentstate transcript search "deploy failed" --agent main --limit 5',
    "agentstate transcript search basil --session <session-id> --json",
  ]);
  addHomeOption(command);
  addJsonOption(command);
  command.action((words: string[], options: SearchOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, 500);
    const query = words.join(" ");
    if (searchTerms(query).length === 0) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `the search query has no words to look for, got ${JSON.stringify(query)}`,
        { details: { query } },
      );
    }
    const hits = withReadHome(options, (home) => {
      if (options.session !== undefined) requireSession(home, options.session, options.agent);
      return home.transcripts.search(query, {
        agentId: options.agent,
        sessionId: options.session,
        limit,
      });
    });
    if (options.json) printJson(hits);
    else process.stdout.write(hits.length === 0 ? "no matches\n" : `${renderHits(hits)}\n`);
  });
}

function renderScopes(scopes: readonly SessionScope[]): string {
  return renderTable(scopes, [
    { header: "AGENT", value: (s) => sanitize(s.agentId) },
    { header: "SESSION", value: (s) => sanitize(s.sessionId) },
    { header: "UPDATED", value: (s) => new Date(s.updatedAt).toISOString() },
    { header: "EVENTS", value: (s) => s.eventCount, align: "right" },
  ]);
}

// The store's largest page of sessions; the list has no cursor, a larger --limit shows more.
const MAX_SCOPES = 100_000;

function registerList(transcript: Command): void {
  const command = transcript
    .command("list")
    .description("list sessions that have a transcript, most recently updated first")
    .option("--agent <id>", "only this agent (default: every agent)")
    .option("--limit <n>", `at most this many sessions (1 to ${MAX_SCOPES})`, "100")
    .addHelpText(
      "after",
      "\nExamples:\n  agentstate transcript list\n  agentstate transcript list --agent main --limit 20\n\nWhen more sessions have a transcript, the last line is `more: --limit <n>`.",
    );
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: ListOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, MAX_SCOPES);
    const { rows: scopes, more } = fetchPage(limit, MAX_SCOPES, (count) =>
      withReadHome(options, (home) =>
        home.transcripts.listScopes({ agentId: options.agent, limit: count }),
      ),
    );
    if (options.json) {
      printJson(scopes);
      return;
    }
    process.stdout.write(scopes.length === 0 ? "no transcripts\n" : `${renderScopes(scopes)}\n`);
    const flags = more ? largerLimit(limit, MAX_SCOPES) : null;
    if (flags !== null) process.stdout.write(moreLine(flags));
  });
}

export function registerTranscript(program: Command): void {
  const transcript = program
    .command("transcript")
    .description("read, search and export session transcripts");
  addExamples(transcript, [
    "agentstate transcript list --limit 20",
    "agentstate transcript show <session-id> --agent main",
    "agentstate transcript search invoice overdue",
    "agentstate transcript search 'deplo*' 销售数据",
  ]);
  registerShow(transcript);
  registerExport(transcript);
  registerSearch(transcript);
  registerList(transcript);
}

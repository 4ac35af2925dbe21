import {
  type FileEntry,
  type NewSessionOptions,
  type SessionEntry,
  type SessionHeader,
  type SessionInfo,
  SessionManager,
} from "@mariozechner/pi-coding-agent";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import type { AgentState } from "../home.js";
import { checkInternals, internals, type PiInternals } from "./pi-internals.js";
import { listSessions, mostRecentSession } from "./session-list.js";
import { sessionIdOf } from "./session-path.js";
import { loadEntries, type StoreTarget, storedSeq, storeEntries } from "./session-rows.js";
import { addToSummary, type SessionSummary, summarize } from "./session-summary.js";

export interface AgentStateSessionOptions {
  /** Routing key (e.g. `agent:main:main`) whose index entry points at this manager's session. */
  sessionKey?: string;
}

const OPTION_KEYS = new Set(["sessionKey"]);

/** pi's constructor is private in its types; at run time it is an ordinary constructor. */
const PiSessionManager = SessionManager as unknown as new (
  cwd: string,
  sessionDir: string,
  sessionFile: string | undefined,
  persist: boolean,
) => SessionManager;

/** Given to the base constructor so that it resumes instead of drawing a new session. */
const RESUME = "agentstate:resume";

function checkOptions(options: AgentStateSessionOptions): AgentStateSessionOptions {
  rejectUnknownOptions(
    options,
    OPTION_KEYS,
    "AgentStateSessionManager",
    (key) => `Unknown AgentStateSessionManager option: ${key}`,
  );
  return Object.freeze({ ...options });
}

function headerOf(entries: readonly FileEntry[]): SessionHeader | undefined {
  return entries.find((e): e is SessionHeader => e.type === "session");
}

/**
 * pi's `SessionManager`, storing its sessions in an agentstate agent database instead of JSONL
 * files. Every entry is stored in the call that makes it, in one transaction (pi's file mode
 * holds entries in memory until the first assistant message); the header stored is the one
 * present at the first append, so a gateway may still set its id and cwd after `open`.
 * `getSessionFile()` returns undefined: a session is named by `getSessionId()` within its agent.
 */
export class AgentStateSessionManager extends PiSessionManager {
  /** The agent whose database holds the sessions. */
  readonly agent!: AgentState;
  private readonly options!: AgentStateSessionOptions;
  private knownSeq = 0;
  private summary!: SessionSummary;

  private constructor(
    agent: AgentState,
    cwd: string,
    options: AgentStateSessionOptions,
    resume: string | undefined,
  ) {
    super(cwd, "", resume === undefined ? undefined : RESUME, false);
    checkInternals(this);
    this.agent = agent;
    this.options = checkOptions(options);
    if (resume === undefined) this.summary = summarize(this.state.fileEntries);
    else this.resume(resume);
  }

  private get state(): PiInternals {
    return internals(this);
  }

  /** A new session in `cwd`, stored at its first append. */
  static create(
    agent: AgentState,
    cwd: string,
    options: AgentStateSessionOptions = {},
  ): AgentStateSessionManager {
    return new AgentStateSessionManager(agent, cwd, options, undefined);
  }

  /**
   * The stored session `sessionId` (or a pi session file path naming it), or a new
   * session with that id when the agent has none, as pi's `open` of a missing file starts one.
   */
  static open(
    agent: AgentState,
    sessionId: string,
    cwdOverride?: string,
    options: AgentStateSessionOptions = {},
  ): AgentStateSessionManager {
    const id = sessionIdOf(sessionId);
    const first = storedSeq(agent, id) > 0 ? agent.transcripts.read(id, { limit: 1 }) : [];
    const header = headerOf(first.map((stored) => stored.event as unknown as FileEntry));
    return new AgentStateSessionManager(
      agent,
      cwdOverride ?? header?.cwd ?? process.cwd(),
      options,
      id,
    );
  }

  /** The session of `cwd` written to last, or a new one. */
  static continueRecent(
    agent: AgentState,
    cwd: string,
    options: AgentStateSessionOptions = {},
  ): AgentStateSessionManager {
    const recent = mostRecentSession(agent, cwd);
    return new AgentStateSessionManager(agent, cwd, options, recent);
  }

  /** A new session in `targetCwd` with every entry of `sourceSessionId`, stored at once. */
  static forkFrom(
    agent: AgentState,
    sourceSessionId: string,
    targetCwd: string,
    options: AgentStateSessionOptions = {},
  ): AgentStateSessionManager {
    const sourceId = sessionIdOf(sourceSessionId);
    const { entries } = loadEntries(agent, sourceId);
    if (headerOf(entries) === undefined) {
      throw new StateError(
        "E_NOT_FOUND",
        `cannot fork: agent ${agent.agentId} has no session ${sourceId}`,
        {
          details: { agentId: agent.agentId, sessionId: sourceId },
        },
      );
    }
    const manager = new AgentStateSessionManager(agent, targetCwd, options, undefined);
    const header = manager.getHeader() as SessionHeader;
    header.parentSession = sourceId;
    manager.replaceEntries([header, ...entries.filter((e) => e.type !== "session")]);
    return manager;
  }

  /** pi's `SessionInfo` of the agent's sessions started in `cwd`; `path` is the session id. */
  static async list(agent: AgentState, cwd: string): Promise<SessionInfo[]> {
    return listSessions(agent, cwd);
  }

  /** pi's `SessionInfo` of every session of the agent; `path` is the session id. */
  static async listAll(agent: AgentState): Promise<SessionInfo[]> {
    return listSessions(agent);
  }

  /** Resumes another stored session (a session id, or a pi file path naming one). */
  override setSessionFile(sessionFile: string): void {
    // The base constructor calls this before the fields exist: the constructor resumes instead.
    if (this.agent === undefined) return;
    this.resume(sessionIdOf(sessionFile));
  }

  override newSession(options?: NewSessionOptions): string | undefined {
    super.newSession(options);
    if (this.agent !== undefined) this.forget();
    return undefined;
  }

  override isPersisted(): boolean {
    return true;
  }

  /** Undefined: the session lives in the agent's database, named by `getSessionId()`. */
  override getSessionFile(): string | undefined {
    return undefined;
  }

  /**
   * A new session holding the branch ending at `leafId` (labels carried over), stored at once;
   * its header's `parentSession` is the id of the session it came from. Returns undefined.
   */
  override createBranchedSession(leafId: string): string | undefined {
    const parent = this.getSessionId();
    const previous = { entries: this.state.fileEntries, seq: this.knownSeq, sessionId: parent };
    super.createBranchedSession(leafId);
    const header = this.getHeader() as SessionHeader;
    header.parentSession = parent;
    try {
      this.replaceEntries([...this.state.fileEntries]);
    } catch (error) {
      this.restore(previous);
      throw error;
    }
    return undefined;
  }

  /** pi calls this once per new entry, after adding it to its tree: store it or take it back. */
  override _persist(entry: SessionEntry): void {
    const state = this.state;
    const first = this.knownSeq === 0;
    const next = { ...(first ? summarize(state.fileEntries.slice(0, 1)) : this.summary) };
    addToSummary(next, entry);
    const header = this.getHeader();
    const entries: FileEntry[] = first && header ? [header, entry] : [entry];
    try {
      this.knownSeq = storeEntries(this.target(), entries, next, entry.type === "session_info");
      this.summary = next;
    } catch (error) {
      state.fileEntries.pop();
      state.byId.delete(entry.id);
      state.leafId = entry.parentId;
      throw error;
    }
  }

  private target(): StoreTarget {
    return {
      agent: this.agent,
      sessionId: this.getSessionId(),
      knownSeq: this.knownSeq,
      sessionKey: this.options.sessionKey,
    };
  }

  /** A session not stored yet: the next append stores the header as it then is. */
  private forget(): void {
    this.knownSeq = 0;
    this.summary = summarize(this.state.fileEntries);
  }

  private resume(sessionId: string): void {
    const state = this.state;
    const { entries, seq } =
      storedSeq(this.agent, sessionId) > 0
        ? loadEntries(this.agent, sessionId)
        : { entries: [], seq: 0 };
    if (headerOf(entries) === undefined) {
      super.newSession({ id: sessionId });
      this.forget();
      return;
    }
    state.sessionId = sessionId;
    state.fileEntries = entries;
    state._buildIndex();
    this.knownSeq = seq;
    this.summary = summarize(entries);
  }

  /** Makes `entries` (header first) this manager's new session and stores them in one go. */
  private replaceEntries(entries: FileEntry[]): void {
    const state = this.state;
    state.fileEntries = entries;
    state._buildIndex();
    this.knownSeq = 0;
    const summary = summarize(entries);
    const named = entries.some((e) => e.type === "session_info");
    this.knownSeq = storeEntries(this.target(), entries, summary, named);
    this.summary = summary;
  }

  private restore(previous: { entries: FileEntry[]; seq: number; sessionId: string }): void {
    const state = this.state;
    state.sessionId = previous.sessionId;
    state.fileEntries = previous.entries;
    state._buildIndex();
    this.knownSeq = previous.seq;
    this.summary = summarize(previous.entries);
  }
}

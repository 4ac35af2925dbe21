/**
 * agentstate: durable SQLite state for AI-agent gateways. The public API, and the only barrel.
 */

export type { SessionsApi } from "./api/sessions-api.js";
export type { HomeSearchOptions, TranscriptScope, TranscriptsApi } from "./api/transcripts-api.js";
export {
  type CheckpointMode,
  type CheckpointResult,
  Database,
  type OpenDatabaseOptions,
  openDatabase,
} from "./db/database.js";
export type { DriverFactory, SqlDriver, SqlStatement, SqlValue } from "./db/driver.js";
export { isStateError, STATE_ERROR_CODES, StateError, type StateErrorCode } from "./db/errors.js";
export { type DatabaseRole, latestSchemaVersion } from "./db/schema.js";
export {
  type AgentOpenOptions,
  type AgentRecord,
  type AgentState,
  type OpenStateHomeOptions,
  openStateHome,
  resolveHomePath,
  StateHome,
} from "./home.js";
export { validateAgentId } from "./ids.js";
export { type DatabaseStatus, describeHome, type HomeStatus } from "./status/describe-home.js";
export type { AgentStores } from "./stores/agent/agent-stores.js";
export type {
  CompactOptions,
  ResetOptions,
  RestoredSession,
  SessionLifecycle,
  StartOptions,
} from "./stores/agent/session-lifecycle.js";
export type {
  PatchOptions,
  SessionEntry,
  SessionEntryData,
  SessionListOptions,
  SessionListPage,
  SessionPatch,
  SessionStore,
} from "./stores/agent/session-store.js";
export type {
  NewSnapshot,
  SnapshotStore,
  TranscriptSnapshot,
} from "./stores/agent/snapshot-store.js";
export type { ForkOptions, TranscriptBranches } from "./stores/agent/transcript-branches.js";
export type { SessionInfo } from "./stores/agent/transcript-rows.js";
export type {
  SearchHit,
  SearchOptions,
  TranscriptSearch,
} from "./stores/agent/transcript-search.js";
export {
  type AppendOptions,
  type AppendResult,
  INLINE_BLOB_THRESHOLD,
  type NewTranscriptEvent,
  type ReadOptions,
  type SessionScope,
  type StoredEvent,
  type TranscriptStore,
} from "./stores/agent/transcript-store.js";
export type { JsonValue } from "./stores/json.js";
export {
  type KvEntry,
  type KvListOptions,
  KvStore,
  MAX_KV_VALUE_BYTES,
} from "./stores/kv-store.js";
export { buildContext, type ContextEntry } from "./transcript/context.js";
export type { TranscriptEvent } from "./transcript/event.js";
export { encodeJsonl, type ParsedLine, parseJsonl } from "./transcript/jsonl-codec.js";
export { TranscriptTree } from "./transcript/tree.js";

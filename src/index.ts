/**
 * agentstate: durable SQLite state for AI-agent gateways. The public API, and the only barrel.
 */
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
export type { JsonValue } from "./stores/json.js";
export {
  type KvEntry,
  type KvListOptions,
  KvStore,
  MAX_KV_VALUE_BYTES,
} from "./stores/kv-store.js";

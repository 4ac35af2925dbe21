/**
 * agentstate: durable SQLite state for AI-agent gateways. The public API, and the only barrel.
 */

export type { AgentPoolStats } from "./agent-pool.js";
export type { InputsApi } from "./api/inputs-api.js";
export type { MaintenanceApi } from "./api/maintenance-api.js";
export type { MemoryApi, RecallOptions } from "./api/memory-api.js";
export type { SessionsApi } from "./api/sessions-api.js";
export type { HomeSearchOptions, TranscriptScope, TranscriptsApi } from "./api/transcripts-api.js";
export type {
  AgentDayEvents,
  SessionUsageGroup,
  SessionUsageReport,
  TokenTotal,
  UsageApi,
  UsageGroup,
  UsageGrouping,
  UsageQueryOptions,
  UsageReport,
  UsageTotals,
} from "./api/usage-api.js";
export type {
  BackupProgress,
  BackupReport,
  CreateBackupOptions,
} from "./backup/create-backup.js";
export { type BackupRunSummary, listBackups } from "./backup/list-backups.js";
export {
  type PruneBackupsOptions,
  type PruneReport,
  pruneBackups,
} from "./backup/prune-backups.js";
export type {
  RestoreBackupOptions,
  RestoreReport,
} from "./backup/restore-backup.js";
export type { VerifyReport } from "./backup/verify-backup.js";
export { type ClusterConfigOverrides, loadClusterConfig } from "./cluster/cluster-config.js";
export {
  type ClusterAgent,
  ClusterHome,
  type ClusterOptions,
  type OpenClusterHomeOptions,
  openClusterHome,
} from "./cluster/cluster-home.js";
export type {
  AgentLease,
  AgentListOptions,
  AgentRefresh,
  AgentRegistration,
  ClaimedCronJob,
  ControlPlane,
  ControlPlaneAgents,
  ControlPlaneBackupRuns,
  ControlPlaneCommitments,
  ControlPlaneConversationBindings,
  ControlPlaneConversations,
  ControlPlaneCron,
  ControlPlaneCronOptions,
  ControlPlaneFlows,
  ControlPlaneLeases,
  ControlPlaneMedia,
  ControlPlaneMigrationQuarantine,
  ControlPlaneMigrationRuns,
  ControlPlaneMigrationSources,
  ControlPlaneMigrations,
  ControlPlanePluginBlobs,
  ControlPlanePluginState,
  ControlPlaneQueue,
  ControlPlaneQueueOptions,
  ControlPlaneSubagents,
  ControlPlaneTaskDelivery,
  ControlPlaneTasks,
  CronClaimOptions,
  CronRecordOptions,
  EnqueueOptions,
  LeaseFence,
  NewTaskRun,
  OpenControlPlaneOptions,
  PostgresControlPlaneOptions,
  QueueCounts,
  RegisteredAgent,
  SqliteControlPlaneOptions,
  TaskDelivery,
  TaskDeliveryUpdate,
  TaskRun,
  TaskStatus,
  TaskTransitionOptions,
} from "./control-plane/control-plane.js";
export { openControlPlane } from "./control-plane/open-control-plane.js";
export type { CheckpointsMode } from "./db/checkpoints.js";
export {
  type CheckpointMode,
  type CheckpointResult,
  Database,
  type OpenDatabaseOptions,
  openDatabase,
} from "./db/database.js";
export {
  DRIVER_NAMES,
  type DriverFactory,
  type DriverName,
  type SqlDriver,
  type SqlStatement,
  type SqlValue,
} from "./db/driver.js";
export { chooseDriver } from "./db/driver-choice.js";
export { isStateError, STATE_ERROR_CODES, StateError, type StateErrorCode } from "./db/errors.js";
export type { JournalMode } from "./db/filesystem.js";
export { type DatabaseRole, latestSchemaVersion } from "./db/schema.js";
export type {
  DoctorProgress,
  DoctorReport,
  FixOptions,
  SourceReport,
} from "./doctor/fix.js";
export { type MigrationPlan, type PlannedSource, planMigration } from "./doctor/plan.js";
export {
  createBackup,
  restoreBackup,
  runDoctorFix,
  startServer,
  verifyBackup,
} from "./entry-points.js";
export {
  collectGarbage,
  type GcDatabaseReport,
  type GcOptions,
  type GcReport,
} from "./gc/collect-garbage.js";
export { type GcSchedule, type GcScheduleOptions, scheduleGc } from "./gc/gc-schedule.js";
export {
  type AgentOpenOptions,
  type AgentPin,
  type AgentRecord,
  type AgentState,
  type HomeSweepReport,
  type OpenStateHomeOptions,
  openStateHome,
  resolveHomePath,
  StateHome,
} from "./home.js";
export { validateAgentId } from "./ids.js";
export type {
  BudgetPlan,
  HomeBytes,
  MaintenanceActionKind,
  MaintenancePlan,
  PlannedAction,
} from "./maintenance/plan.js";
export type {
  EffectiveRules,
  MaintenanceMode,
  MaintenanceOverrides,
  MaintenancePolicy,
  MaintenanceRules,
} from "./maintenance/policy.js";
export type { Protection, SessionFacts } from "./maintenance/protection.js";
export type {
  ActionOutcome,
  BudgetOutcome,
  MaintenanceOptions,
  PlanReport,
  RunReport,
} from "./maintenance/run.js";
export { parseSecretRef } from "./memory/secret-ref.js";
export {
  FACT_CATEGORIES,
  FACT_SENSITIVITIES,
  type FactCategory,
  type FactSensitivity,
  RECALL_POLICIES,
  type RecallPolicy,
  TOPIC_STATUSES,
  type TopicStatus,
} from "./memory/taxonomy.js";
export type {
  ContextSnapshot,
  Fact,
  FactSource,
  FactVersion,
  RecalledFact,
  RecallReason,
  RecallResult,
  SessionState,
  Topic,
  TopicMember,
} from "./memory/types.js";
export type {
  RunningServer,
  StartServerOptions,
} from "./server/start-server.js";
export { type DatabaseStatus, describeHome, type HomeStatus } from "./status/describe-home.js";
export type { AgentStorage, Budget, HomeStorage } from "./status/storage-budget.js";
export type {
  AgentMemory,
  MemoryRecallOptions,
  RecoveredMemory,
  TopicSwitch,
} from "./stores/agent/agent-memory.js";
export type { AgentStores } from "./stores/agent/agent-stores.js";
export type {
  Artifact,
  ArtifactInfo,
  NewArtifact,
  RunArtifactStore,
  ToolArtifactStore,
} from "./stores/agent/artifact-store.js";
export type { CacheEntry, CacheSet, CacheStore } from "./stores/agent/cache-store.js";
export type { ColdMoveResult, ColdSessionInfo, ColdStore } from "./stores/agent/cold-store.js";
export type {
  ContextSnapshotListOptions,
  ContextSnapshotQuery,
  ContextSnapshotStore,
  NewContextSnapshot,
} from "./stores/agent/context-snapshot-store.js";
export type {
  FactListOptions,
  FactScopeFilter,
  FactStore,
  NewFact,
} from "./stores/agent/fact-store.js";
export type {
  AcceptOptions,
  AcceptResult,
  ClaimOptions,
  DanglingToolCall,
  InputCompletion,
  InputListOptions,
  InputOutcome,
  InputRecord,
  InputState,
  InputView,
  NewInput,
  RecoveredInputs,
  RecoveredSessionInputs,
} from "./stores/agent/input-store.js";
export type { MemoryStateStore, SessionStatePatch } from "./stores/agent/memory-state-store.js";
export type {
  CompactOptions,
  ResetOptions,
  RestoredSession,
  SessionLifecycle,
  StartOptions,
} from "./stores/agent/session-lifecycle.js";
export type { SessionSortKey } from "./stores/agent/session-query.js";
export type {
  PatchOptions,
  SessionEntry,
  SessionEntryData,
  SessionListOptions,
  SessionListPage,
  SessionPatch,
  SessionStore,
  UpsertOptions,
} from "./stores/agent/session-store.js";
export type {
  SessionModelUsage,
  SessionUsage,
  SessionUsageQuery,
} from "./stores/agent/session-usage.js";
export type {
  NewSnapshot,
  SnapshotStore,
  TranscriptSnapshot,
} from "./stores/agent/snapshot-store.js";
export type {
  NewTopic,
  NewTopicMember,
  TopicListOptions,
  TopicPatch,
} from "./stores/agent/topic-rows.js";
export type { TopicStore } from "./stores/agent/topic-store.js";
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
export type { DailyUsage, UsageQuery, UsageRange } from "./stores/agent/usage-query.js";
export type { VfsStat } from "./stores/agent/vfs-resolver.js";
export type { VfsStore, VirtualAgentFs } from "./stores/agent/vfs-store.js";
export type { BackupRun, BackupRunStatus } from "./stores/global/backup-run-store.js";
export type {
  Commitment,
  CommitmentStatus,
  CommitmentStore,
  NewCommitment,
} from "./stores/global/commitment-store.js";
export type {
  ConversationBinding,
  ConversationBindingStore,
  NewConversationBinding,
} from "./stores/global/conversation-binding-store.js";
export type {
  Conversation,
  ConversationAddress,
  ConversationListOptions,
  ConversationStore,
} from "./stores/global/conversation-store.js";
export type { CronJob, CronRunLog } from "./stores/global/cron-rows.js";
export type { CronStore } from "./stores/global/cron-store.js";
export type {
  ClaimedDelivery,
  DeliveryEntry,
  DeliveryQueueOptions,
  DeliveryQueueStore,
  DeliveryStatus,
  NewDeliveryEntry,
  ReceiptQuery,
  ReconcileReport,
  SettleOptions,
  UnknownDecision,
  UnknownPolicy,
} from "./stores/global/delivery-queue-store.js";
export type { SweepReport } from "./stores/global/expiry.js";
export type {
  FlowRun,
  FlowStore,
  FlowUpdate,
  NewFlowRun,
} from "./stores/global/flow-store.js";
export type { GlobalStores } from "./stores/global/global-stores.js";
export type {
  Media,
  MediaInfo,
  MediaListOptions,
  MediaPutOptions,
  MediaStore,
} from "./stores/global/media-store.js";
export type {
  MigrationRun,
  MigrationRunStatus,
  MigrationSource,
  MigrationSourceStatus,
  NewMigrationSource,
} from "./stores/global/migration-ledger-store.js";
export type {
  NewQuarantinedLine,
  QuarantinedLine,
  QuarantineListOptions,
} from "./stores/global/migration-quarantine-store.js";
export type { PluginBlobStore } from "./stores/global/plugin-blob-store.js";
export type {
  PluginListOptions,
  PluginSetOptions,
  PluginStateEntry,
  PluginStateStore,
} from "./stores/global/plugin-state-store.js";
export type { SandboxRegistryStore } from "./stores/global/sandbox-registry-store.js";
export type {
  SubagentRun,
  SubagentRunPatch,
  SubagentRunRecord,
  SubagentRunStore,
  SubagentSessionRole,
} from "./stores/global/subagent-run-store.js";
export type { TaskStore } from "./stores/global/task-store.js";
export type { TuiSessionStore } from "./stores/global/tui-session-store.js";
export type { JsonValue } from "./stores/json.js";
export {
  type KvEntry,
  type KvListOptions,
  KvStore,
  MAX_KV_VALUE_BYTES,
} from "./stores/kv-store.js";
export type { RetentionOptions, RetentionPolicy } from "./stores/retention.js";
export { buildContext, type ContextEntry } from "./transcript/context.js";
export type { TranscriptEvent } from "./transcript/event.js";
export { encodeJsonl, type ParsedLine, parseJsonl } from "./transcript/jsonl-codec.js";
export { TranscriptTree } from "./transcript/tree.js";
export {
  exportTar,
  exportToDirectory,
  importFromDirectory,
  importTar,
  type VfsExportOptions,
  type VfsImportOptions,
} from "./vfs-host/archive.js";
export type {
  AgentRuntimeBackend,
  AssistantBlock,
  AssistantReply,
  BackendTurn,
} from "./worker/backend.js";
export type { BackendSpec, ScriptStep } from "./worker/backend-spec.js";
export { OpenAiBackend } from "./worker/backends/openai-backend.js";
export { ScriptedBackend } from "./worker/backends/scripted-backend.js";
export {
  type DemoConversation,
  type DemoConversationOptions,
  runDemoConversation,
} from "./worker/demo-conversation.js";
export {
  type PermissionGrants,
  type PermissionOptions,
  type PermissionProfile,
  permissionFlags,
  permissionGrants,
} from "./worker/permission.js";
export {
  type AgentTurnParams,
  FILESYSTEM_MODES,
  type FilesystemMode,
  type FilesystemOptions,
  type PreparedAgentRun,
  type PreparedTurn,
  prepareAgentRun,
  type RunEventHandler,
} from "./worker/prepared-run.js";
export type {
  ExecutionMode,
  FinalEvent,
  LifecycleEvent,
  MessageEvent,
  RunBlocker,
  RunEvent,
  RunFailure,
  RunFailureKind,
  RunResult,
  RunStatus,
  StreamEvent,
  TokenUsage,
  ToolEvent,
  UsageEvent,
} from "./worker/run-events.js";
export {
  AgentRuntime,
  type AgentRuntimeOptions,
  createAgentRuntime,
  resolveWorkerMode,
  WORKER_MODES,
  type WorkerMode,
} from "./worker/runner.js";
export {
  TOOL_DEFINITIONS,
  type ToolCall,
  type ToolDefinition,
  type ToolOutcome,
  type TurnTools,
} from "./worker/turn-tools.js";

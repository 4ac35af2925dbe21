import type { Database } from "../../db/database.js";
import { KvStore } from "../kv-store.js";
import { BackupRunStore } from "./backup-run-store.js";
import { CommitmentStore } from "./commitment-store.js";
import { ConversationBindingStore } from "./conversation-binding-store.js";
import { ConversationStore } from "./conversation-store.js";
import { CronStore } from "./cron-store.js";
import { DeliveryQueueStore } from "./delivery-queue-store.js";
import { FlowStore } from "./flow-store.js";
import { MediaStore } from "./media-store.js";
import { MigrationLedgerStore } from "./migration-ledger-store.js";
import { MigrationQuarantineStore } from "./migration-quarantine-store.js";
import { PluginBlobStore } from "./plugin-blob-store.js";
import { PluginStateStore } from "./plugin-state-store.js";
import { QuickCheckStore } from "./quick-check-store.js";
import { SandboxRegistryStore } from "./sandbox-registry-store.js";
import { SubagentRunStore } from "./subagent-run-store.js";
import { TaskStore } from "./task-store.js";
import { TuiSessionStore } from "./tui-session-store.js";

/**
 * The control-plane stores over the global database, each with its statements prepared once.
 * `StateHome` extends this, so they are fields of the home (`home.cron`, `home.queue`, …).
 */
export class GlobalStores {
  readonly kv: KvStore;
  readonly plugins: PluginStateStore;
  readonly pluginBlobs: PluginBlobStore;
  readonly media: MediaStore;
  readonly cron: CronStore;
  readonly tasks: TaskStore;
  readonly flows: FlowStore;
  readonly subagents: SubagentRunStore;
  /** The outbound delivery queues: enqueue, claim with a lease, send, settle, retry, receipts. */
  readonly queue: DeliveryQueueStore;
  readonly bindings: ConversationBindingStore;
  /** One stable id per platform conversation, for receipts and bindings. */
  readonly conversations: ConversationStore;
  readonly commitments: CommitmentStore;
  readonly tuiSessions: TuiSessionStore;
  readonly sandboxes: SandboxRegistryStore;
  readonly backups: BackupRunStore;
  readonly migrations: MigrationLedgerStore;
  /** Legacy lines `doctor --fix --quarantine` kept as bytes instead of importing. */
  readonly quarantine: MigrationQuarantineStore;
  /** Each agent database's last background `PRAGMA quick_check` (run by `agentstate gc`). */
  readonly quickChecks: QuickCheckStore;

  constructor(db: Database) {
    this.kv = new KvStore(db);
    this.plugins = new PluginStateStore(db);
    this.pluginBlobs = new PluginBlobStore(db);
    this.media = new MediaStore(db);
    this.cron = new CronStore(db);
    this.tasks = new TaskStore(db);
    this.flows = new FlowStore(db);
    this.subagents = new SubagentRunStore(db);
    this.queue = new DeliveryQueueStore(db);
    this.bindings = new ConversationBindingStore(db);
    this.conversations = new ConversationStore(db);
    this.commitments = new CommitmentStore(db);
    this.tuiSessions = new TuiSessionStore(db);
    this.sandboxes = new SandboxRegistryStore(db);
    this.backups = new BackupRunStore(db);
    this.migrations = new MigrationLedgerStore(db);
    this.quarantine = new MigrationQuarantineStore(db);
    this.quickChecks = new QuickCheckStore(db);
  }
}

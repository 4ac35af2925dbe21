import type { Database } from "../../db/database.js";
import { KvStore } from "../kv-store.js";
import { BackupRunStore } from "./backup-run-store.js";
import { CommitmentStore } from "./commitment-store.js";
import { ConversationBindingStore } from "./conversation-binding-store.js";
import { CronStore } from "./cron-store.js";
import { DeliveryQueueStore } from "./delivery-queue-store.js";
import { FlowStore } from "./flow-store.js";
import { MediaStore } from "./media-store.js";
import { MigrationLedgerStore } from "./migration-ledger-store.js";
import { PluginBlobStore } from "./plugin-blob-store.js";
import { PluginStateStore } from "./plugin-state-store.js";
import { SandboxRegistryStore } from "./sandbox-registry-store.js";
import { SubagentRunStore } from "./subagent-run-store.js";
import { TaskStore } from "./task-store.js";
import { TuiSessionStore } from "./tui-session-store.js";

/** The control-plane stores over the global database, each with its statements prepared once. */
export interface GlobalStores {
  readonly kv: KvStore;
  readonly plugins: PluginStateStore;
  readonly pluginBlobs: PluginBlobStore;
  readonly media: MediaStore;
  readonly cron: CronStore;
  readonly tasks: TaskStore;
  readonly flows: FlowStore;
  readonly subagents: SubagentRunStore;
  /** The outbound delivery queue: enqueue, claim with a lease, ack, retry, dead-letter. */
  readonly queue: DeliveryQueueStore;
  readonly bindings: ConversationBindingStore;
  readonly commitments: CommitmentStore;
  readonly tuiSessions: TuiSessionStore;
  readonly sandboxes: SandboxRegistryStore;
  readonly backups: BackupRunStore;
  readonly migrations: MigrationLedgerStore;
}

export function createGlobalStores(db: Database): GlobalStores {
  return Object.freeze({
    kv: new KvStore(db),
    plugins: new PluginStateStore(db),
    pluginBlobs: new PluginBlobStore(db),
    media: new MediaStore(db),
    cron: new CronStore(db),
    tasks: new TaskStore(db),
    flows: new FlowStore(db),
    subagents: new SubagentRunStore(db),
    queue: new DeliveryQueueStore(db),
    bindings: new ConversationBindingStore(db),
    commitments: new CommitmentStore(db),
    tuiSessions: new TuiSessionStore(db),
    sandboxes: new SandboxRegistryStore(db),
    backups: new BackupRunStore(db),
    migrations: new MigrationLedgerStore(db),
  });
}

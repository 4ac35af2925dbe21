// A global database left by the schema-6 release, with queued, leased and dead-lettered deliveries
// and a conversation binding, opened by the current code: 0007 keeps every row as it was.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { loadMigrations } from "../../src/db/schema.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { ConversationBindingStore } from "../../src/stores/global/conversation-binding-store.js";
import { DeliveryQueueStore } from "../../src/stores/global/delivery-queue-store.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";

const tempDir = useTempDirs();
const NOW = Date.UTC(2026, 4, 6, 12);

function createSchema6Global(path: string): void {
  const raw = openRawSqlite(path);
  raw.exec("PRAGMA journal_mode = WAL");
  raw.exec("BEGIN IMMEDIATE");
  raw.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
    sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const record = raw.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?, 1)");
  for (const m of loadMigrations("global").slice(0, 6)) {
    raw.exec(m.sql);
    record.run(m.version, m.name, m.sha256);
  }
  const insert = raw.prepare(
    `INSERT INTO delivery_queue_entries (queue_name, id, status, entry_json, session_key, channel,
       available_at, lease_owner, lease_id, retry_count, last_attempt_at, last_error, enqueued_at,
       updated_at, failed_at) VALUES (?, ?, ?, ?, 'agent:main:main', 'telegram', ?, ?, ?, ?, NULL, ?, 1, 1, ?)`,
  );
  insert.run("outbound-delivery", "due", "pending", '{"text":"a"}', 1, null, null, 0, null, null);
  insert.run(
    "outbound-delivery",
    "held",
    "pending",
    '{"text":"b"}',
    NOW + 5000,
    "w",
    "L1",
    1,
    "x",
    null,
  );
  insert.run("outbound-delivery", "dead", "failed", '{"text":"c"}', 1, null, null, 5, "gone", 7);
  raw.exec(`INSERT INTO current_conversation_bindings (binding_key, binding_id, channel,
    account_id, conversation_id, target_session_key, status, bound_at, expires_at, record_json)
    VALUES ('tg::c1', 'tg::c1', 'telegram', NULL, 'c1', 'agent:main:main', 'active', 1, NULL, '{}')`);
  raw.exec("PRAGMA user_version = 6");
  raw.exec("COMMIT");
  raw.close();
}

describe("global schema 7 upgrade", () => {
  it("keeps queued, leased and dead-lettered deliveries and old bindings as they were", () => {
    const path = join(tempDir(), "state.sqlite");
    createSchema6Global(path);
    const db = openDatabase({ path, role: "global" });
    expect(db.schemaVersion).toBe(loadMigrations("global").length);
    const q = new DeliveryQueueStore(db, { clock: () => NOW });
    expect(q.get("outbound-delivery", "held")).toMatchObject({
      status: "pending",
      leaseOwner: "w",
      leaseId: "L1",
      retryCount: 1,
      lastError: "x",
      idempotencyKey: null,
      sendStartedAt: null,
    });
    expect(q.listFailed("outbound-delivery").map((e) => [e.id, e.lastError])).toEqual([
      ["dead", "gone"],
    ]);
    expect(q.counts("outbound-delivery")).toEqual({ pending: 1, leased: 1, failed: 1 });
    // The lease taken before the upgrade still works with the new calls.
    q.beginSend("outbound-delivery", "held", "L1");
    q.settle("outbound-delivery", "held", "L1", { platformMessageId: "m1" });
    expect(q.claim("outbound-delivery", "new")?.id).toBe("due");
    const bindings = new ConversationBindingStore(db);
    expect(bindings.get("tg::c1")).toMatchObject({ conversationId: "c1", conversationRef: null });
    expect(db.prepare<{ ok: string }>("PRAGMA foreign_key_check").all()).toEqual([]);
    db.close();
  });
});

import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Database } from "../../db/database.js";
import { openDatabase } from "../../db/database.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { ConversationBindingStore } from "./conversation-binding-store.js";
import { expiringTables, sweepExpired } from "./expiry.js";
import { MediaStore } from "./media-store.js";
import { PluginBlobStore } from "./plugin-blob-store.js";
import { PluginStateStore } from "./plugin-state-store.js";
import { rowCount, simulatedClock, useGlobalDb } from "./test-support/global-db.js";

const openDb = useGlobalDb();
const tempDir = useTempDirs();
const TABLES = [
  "current_conversation_bindings",
  "media_blobs",
  "plugin_blob_entries",
  "plugin_state_entries",
];

/** Writes one row into `table` through its store, with a TTL or none. */
function writer(db: Database, clock: ReturnType<typeof simulatedClock>) {
  const options = { clock: clock.now };
  const state = new PluginStateStore(db, options);
  const blobs = new PluginBlobStore(db, options);
  const media = new MediaStore(db, options);
  const bindings = new ConversationBindingStore(db, options);
  return (table: string, key: string, ttlMs: number | undefined) => {
    const ttl = ttlMs === undefined ? {} : { ttlMs };
    if (table === "plugin_state_entries") state.set("p", "ns", key, 1, ttl);
    else if (table === "plugin_blob_entries") blobs.set("p", "ns", key, Buffer.from(key), ttl);
    else if (table === "media_blobs") media.put("inbound", key, Buffer.from(key), ttl);
    else
      bindings.bind({
        bindingKey: key,
        channel: "c",
        conversationId: key,
        targetSessionKey: "s",
        ...ttl,
      });
  };
}

describe("sweepExpired", () => {
  it("covers every table with an expires_at column, found from the schema", () => {
    expect(expiringTables(openDb())).toEqual(TABLES);
  });

  it("removes exactly the expired rows and counts them per table (property)", () => {
    const row = fc.record({
      table: fc.constantFrom(...TABLES),
      ttlMs: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }),
      writtenAt: fc.integer({ min: 0, max: 1000 }),
    });
    const db = openDb();
    const clock = simulatedClock(0);
    const write = writer(db, clock);
    fc.assert(
      fc.property(
        fc.array(row, { maxLength: 30 }),
        fc.integer({ min: 0, max: 2500 }),
        (rows, sweepAt) => {
          for (const table of TABLES) db.exec(`DELETE FROM ${table}`);
          const expected: Record<string, number> = Object.fromEntries(TABLES.map((t) => [t, 0]));
          const live: Record<string, number> = { ...expected };
          rows.forEach(({ table, ttlMs, writtenAt }, i) => {
            clock.set(writtenAt);
            write(table, `k${i}`, ttlMs);
            const expired = ttlMs !== undefined && writtenAt + ttlMs <= sweepAt;
            if (expired) expected[table] = (expected[table] ?? 0) + 1;
            else live[table] = (live[table] ?? 0) + 1;
          });
          const report = sweepExpired(db, sweepAt);
          expect(report.tables).toEqual(expected);
          expect(report.total).toBe(Object.values(expected).reduce((a, b) => a + b, 0));
          for (const table of TABLES) expect(rowCount(db, table), table).toBe(live[table]);
          expect(sweepExpired(db, sweepAt).total).toBe(0);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("sweeps agent databases too (their cache rows expire the same way)", () => {
    const agentDb = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
    const tables = expiringTables(agentDb);
    expect(sweepExpired(agentDb, 0)).toEqual({
      tables: Object.fromEntries(tables.map((t) => [t, 0])),
      total: 0,
    });
    agentDb.close();
  });
});

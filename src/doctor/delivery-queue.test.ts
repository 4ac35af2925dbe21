import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";
import { SIDECAR_KV_SCOPE } from "./kinds/sidecar-kind.js";
import { planMigration } from "./plan.js";

const tempDir = useTempDirs();
const noBackup = async () => "(test: no backup)";

function write(home: string, path: string, value: unknown): void {
  mkdirSync(join(home, path, ".."), { recursive: true });
  writeFileSync(join(home, path), typeof value === "string" ? value : JSON.stringify(value));
}

const delivery = (id: string, extra = {}) => ({
  id,
  enqueuedAt: 1772000000000,
  channel: "telegram",
  to: "1078321387",
  payloads: [{ text: "Your brief is ready", replyToCurrent: false }],
  retryCount: 0,
  ...extra,
});

describe("doctor: queued deliveries and small state files", () => {
  it("imports pending deliveries as claimable entries and failed ones as dead letters", async () => {
    const home = tempDir();
    write(home, "delivery-queue/d1.json", delivery("d1"));
    write(
      home,
      "delivery-queue/failed/d2.json",
      delivery("d2", {
        retryCount: 5,
        lastError: "403 Forbidden",
        mirror: { sessionKey: "agent:main:main", agentId: "main", text: "x" },
      }),
    );
    write(home, "session-delivery-queue/s1.json", { enqueuedAt: 1772000000001, payloads: [] });
    write(home, "commitments/commitments.json", { version: 1, commitments: [{ id: "c1" }] });
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.sources.map((s) => [s.path, s.kind, s.status])).toEqual(
      expect.arrayContaining([
        ["delivery-queue/d1.json", "delivery-queue", "imported"],
        ["delivery-queue/failed/d2.json", "delivery-queue", "imported"],
        ["session-delivery-queue/s1.json", "delivery-queue", "imported"],
        ["commitments/commitments.json", "sidecar", "imported"],
      ]),
    );
    const state = openStateHome({ home, create: false });
    const claimed = state.queue.claim("outbound-delivery", "test", { leaseMs: 1000 });
    expect(claimed).toMatchObject({ id: "d1", channel: "telegram", enqueuedAt: 1772000000000 });
    expect(claimed?.payload).toEqual(delivery("d1"));
    expect(state.queue.claim("outbound-delivery", "test")).toBeUndefined();
    const failed = state.db
      .prepare<{
        id: string;
        status: string;
        retry_count: number;
        last_error: string;
        session_key: string;
      }>(
        "SELECT id, status, retry_count, last_error, session_key FROM delivery_queue_entries WHERE status = 'failed'",
      )
      .all();
    expect(failed).toEqual([
      {
        id: "d2",
        status: "failed",
        retry_count: 5,
        last_error: "403 Forbidden",
        session_key: "agent:main:main",
      },
    ]);
    expect(state.queue.claim("session-delivery", "test")?.id).toBe("s1");
    expect(state.kv.get(SIDECAR_KV_SCOPE, "commitments/commitments.json")).toEqual({
      version: 1,
      commitments: [{ id: "c1" }],
    });
    state.close();
    expect(existsSync(join(home, "delivery-queue/d1.json"))).toBe(false);
  });

  it("a rerun finds every delivery already queued and adds none", async () => {
    const home = tempDir();
    write(home, "delivery-queue/d1.json", delivery("d1"));
    await runDoctorFix({ home, backup: noBackup, keepSources: true });
    const state = openStateHome({ home, create: false });
    state.db.exec("DELETE FROM migration_sources");
    state.close();
    const again = await runDoctorFix({ home, backup: noBackup, keepSources: true });
    expect(again.sources[0]).toMatchObject({ status: "imported", records: 1, alreadyPresent: 1 });
    const after = openStateHome({ home, create: false });
    expect(after.db.prepare("SELECT count(*) AS n FROM delivery_queue_entries").get()).toEqual({
      n: 1,
    });
    after.close();
  });

  it("names a delivery file that is not an object and leaves it in place", async () => {
    const home = tempDir();
    write(home, "delivery-queue/bad.json", "[1, 2]");
    expect(planMigration(home).sources[0]).toMatchObject({ action: "refuse" });
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.sources[0]?.status).toBe("refused");
    expect(report.sources[0]?.error ?? "").toMatch(/not a JSON object/);
    expect(existsSync(join(home, "delivery-queue/bad.json"))).toBe(true);
  });
});

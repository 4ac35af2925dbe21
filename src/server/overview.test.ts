import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clearDamaged, markDamaged } from "../db/damage-marker.js";
import { openStateHome, type StateHome } from "../home.js";
import { createApp, type ServerApp } from "./app.js";
import {
  agentDbPath,
  cronCountsBySql,
  familiesBySql,
  globalDbPath,
  queueCountsBySql,
  scalar,
  withRaw,
} from "./test-support/chart-oracle.js";
import {
  DEAD_LETTER_ERROR,
  DIGEST_ERROR,
  EMAIL_QUEUE,
  type SeededCharts,
  seedCharts,
} from "./test-support/seed-charts.js";
import { type SeededHome, seedHome } from "./test-support/seed-home.js";
import { seedInbound } from "./test-support/seed-inbound.js";

// Every figure the overview and the charts serve, held against plain SQL over the seeded files
// on a second connection: not the code under test.

const ORIGIN = "http://127.0.0.1:4711";
let dir: string;
let seeded: SeededHome;
let charts: SeededCharts;
let home: StateHome;
let server: ServerApp;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "agentstate-overview-"));
  seeded = seedHome(dir);
  seedInbound(seeded);
  charts = await seedCharts(seeded);
  home = openStateHome({ home: dir, create: false });
  server = createApp({ home });
});

afterAll(() => {
  server?.close();
  home?.close();
  rmSync(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are asserted field by field
async function get(path: string): Promise<{ status: number; body: any }> {
  const response = await server.app.request(`${ORIGIN}${path}`);
  return { status: response.status, body: await response.json() };
}

const agentPath = (id: string) => agentDbPath(dir, id);
const globalPath = () => globalDbPath(dir);

function fileAndWal(path: string): number {
  let total = statSync(path).size;
  try {
    total += statSync(`${path}-wal`).size;
  } catch {}
  return total;
}

/** Every regular file's size under `dir`: the oracle for the disk figures. */
function walkBytes(path: string): number {
  if (!existsSync(path)) return 0;
  return readdirSync(path, { withFileTypes: true }).reduce((sum, entry) => {
    const child = join(path, entry.name);
    if (entry.isDirectory()) return sum + walkBytes(child);
    return entry.isFile() ? sum + lstatSync(child).size : sum;
  }, 0);
}

describe("GET /api/overview", () => {
  it("gives every byte of the home and each agent's hot and cold bytes against the budget", async () => {
    const config = join(dir, "agentstate.json");
    writeFileSync(config, JSON.stringify({ maintenance: { maxDiskBytes: 10_000 } }));
    try {
      const { body } = await get("/api/overview");
      const homeBytes = walkBytes(dir);
      expect(body.disk.homeBytes).toBe(homeBytes);
      expect(body.disk.budget).toEqual({
        maxDiskBytes: 10_000,
        highWaterBytes: 8_000,
        overBytes: homeBytes - 10_000,
      });
      expect(body.disk.agents.map((a: { agentId: string }) => a.agentId)).toEqual([
        "main",
        "research",
      ]);
      for (const agent of body.disk.agents) {
        const db = agentPath(agent.agentId);
        const shm = existsSync(`${db}-shm`) ? statSync(`${db}-shm`).size : 0;
        expect(agent).toEqual({
          agentId: agent.agentId,
          hotBytes: fileAndWal(db) + shm,
          coldBytes: walkBytes(join(db, "..", "cold")),
          totalBytes: walkBytes(join(dir, "agents", agent.agentId)),
          budget: null,
        });
      }
    } finally {
      rmSync(config);
    }
  });

  it("gives each agent's activity, counts, size, schema and last backup as SQL sees them", async () => {
    const { status, body } = await get("/api/overview");
    expect(status).toBe(200);
    expect(body.agents.map((a: { agentId: string }) => a.agentId)).toEqual(["main", "research"]);
    for (const agent of body.agents) {
      const expected = withRaw(agentPath(agent.agentId), (db) => ({
        sessions: scalar(db, "SELECT count(*) FROM sessions"),
        events: scalar(db, "SELECT count(*) FROM transcript_events"),
        lastEventAt: scalar(db, "SELECT max(created_at) FROM transcript_events"),
        version: scalar(db, "PRAGMA user_version"),
      }));
      const backup = withRaw(globalPath(), (db) =>
        db
          .prepare(
            `SELECT r.id AS runId, r.created_at AS at, json_extract(d.value, '$.integrityCheck') AS check_
             FROM backup_runs r, json_each(r.manifest_json, '$.databases') d
             WHERE r.status = 'succeeded' AND json_extract(d.value, '$.agentId') = ?
             ORDER BY r.created_at DESC LIMIT 1`,
          )
          .get(agent.agentId),
      ) as { runId: string; at: number; check_: string };
      expect(agent).toMatchObject({
        present: true,
        damaged: null,
        sessions: expected.sessions,
        events: expected.events,
        lastEventAt: expected.lastEventAt,
        bytes: fileAndWal(agentPath(agent.agentId)),
        schema: { version: expected.version },
        lastBackup: { runId: backup.runId, at: backup.at, integrityCheck: backup.check_ },
      });
      expect(agent.lastBackup.runId).toBe(charts.backupId);
      expect(agent.lastBackup.integrityCheck).toBe("ok");
      expect(agent.lastActivityAt).toBeGreaterThanOrEqual(agent.lastEventAt);
    }
  });

  it("gives the home's totals, last backup and doctor ledger as SQL sees them", async () => {
    const { body } = await get("/api/overview");
    const perAgent = ["main", "research"].map((id) =>
      withRaw(agentPath(id), (db) => ({
        sessions: Number(scalar(db, "SELECT count(*) FROM sessions")),
        events: Number(scalar(db, "SELECT count(*) FROM transcript_events")),
      })),
    );
    const ledger = withRaw(globalPath(), (db) => ({
      last: db
        .prepare("SELECT id, status FROM backup_runs ORDER BY created_at DESC LIMIT 1")
        .get() as { id: string; status: string },
      run: db
        .prepare("SELECT id, status FROM migration_runs ORDER BY started_at DESC LIMIT 1")
        .get() as { id: string; status: string },
      sources: db
        .prepare("SELECT status, count(*) AS n FROM migration_sources GROUP BY status")
        .all() as { status: string; n: number }[],
    }));
    expect(body.totals).toEqual({
      agents: 2,
      sessions: perAgent.reduce((s, a) => s + a.sessions, 0),
      events: perAgent.reduce((s, a) => s + a.events, 0),
      bytes:
        fileAndWal(globalPath()) +
        fileAndWal(agentPath("main")) +
        fileAndWal(agentPath("research")),
    });
    expect(body.lastBackup).toMatchObject({ runId: ledger.last.id, status: ledger.last.status });
    expect(body.migration.lastRun).toMatchObject(ledger.run);
    expect(body.migration.sources).toEqual(
      Object.fromEntries(ledger.sources.map((s) => [s.status, s.n])),
    );
  });

  it("reports a quarantined database without opening it", async () => {
    markDamaged(agentPath("research"), ["*** in database main *** Page 7: btreeInitPage() error"]);
    try {
      const { status, body } = await get("/api/overview");
      expect(status).toBe(200);
      const research = body.agents.find((a: { agentId: string }) => a.agentId === "research");
      expect(research.damaged.problems).toEqual([
        "*** in database main *** Page 7: btreeInitPage() error",
      ]);
      expect(research).toMatchObject({ sessions: null, events: null, bytes: null });
      const storage = await get("/api/charts/storage?agent=research");
      expect(storage.body.agents).toEqual([{ agentId: "research", storage: null }]);
    } finally {
      clearDamaged(agentPath("research"));
    }
  });

  it("refuses query parameters it does not know", async () => {
    const { status, body } = await get("/api/overview?check=true");
    expect(status).toBe(400);
    expect(body.error.code).toBe("E_INVALID_ARGUMENT");
  });
});

describe("GET /api/charts/storage", () => {
  it("splits each agent database by table family as dbstat counts it", async () => {
    const { status, body } = await get("/api/charts/storage");
    expect(status).toBe(200);
    expect(body.families).toEqual(["events", "blobs", "vfs", "fts", "other"]);
    for (const { agentId, storage } of body.agents) {
      const sql = withRaw(agentPath(agentId), familiesBySql);
      expect(storage).toEqual({
        source: "dbstat",
        fileBytes: sql.file,
        freeBytes: sql.free,
        families: {
          events: sql.events,
          blobs: sql.blobs,
          vfs: sql.vfs,
          fts: sql.fts,
          other: sql.other,
        },
      });
    }
    const [main, research] = body.agents;
    expect(main.storage.families.vfs).toBeGreaterThan(charts.vfsBytes);
    expect(research.storage.families.blobs).toBeGreaterThan(charts.blobBytes);
  });

  it("answers for one agent, 404 for an unknown one and 400 for a malformed id", async () => {
    const one = await get("/api/charts/storage?agent=research");
    expect(one.body.agents.map((a: { agentId: string }) => a.agentId)).toEqual(["research"]);
    expect((await get("/api/charts/storage?agent=nobody")).status).toBe(404);
    expect((await get("/api/charts/storage?agent=..%2Fetc")).status).toBe(400);
    expect((await get("/api/charts/storage?agent=main&agent=research")).status).toBe(400);
  });
});

describe("GET /api/charts/cron", () => {
  it("counts each job's runs per UTC day by status, with its last error, as SQL does", async () => {
    const { status, body } = await get("/api/charts/cron?days=30");
    expect(status).toBe(200);
    const today = withRaw(globalPath(), (db) => scalar(db, "SELECT date('now')"));
    expect(body.days).toHaveLength(30);
    expect(new Date(body.days.at(-1)).toISOString().slice(0, 10)).toBe(today);
    const rows = cronCountsBySql(dir, 30);
    const served: typeof rows = [];
    for (const job of body.jobs) {
      for (const status of ["ok", "error", "skipped"]) {
        job.counts[status].forEach((n: number, i: number) => {
          const day = new Date(body.days[i]).toISOString().slice(0, 10);
          if (n > 0) served.push({ job: job.jobId, status, day, n });
        });
      }
    }
    const order = (r: (typeof rows)[number]) => `${r.job} ${r.status} ${r.day}`;
    expect(served.sort((a, b) => order(a).localeCompare(order(b)))).toEqual(
      rows.sort((a, b) => order(a).localeCompare(order(b))),
    );
    expect(rows.length).toBeGreaterThanOrEqual(5);
    const lastErrors = withRaw(globalPath(), (db) =>
      db
        .prepare(
          `SELECT job_id AS job, error FROM cron_run_logs c WHERE status = 'error' AND ran_at =
             (SELECT max(ran_at) FROM cron_run_logs WHERE job_id = c.job_id AND status = 'error')`,
        )
        .all(),
    ) as { job: string; error: string }[];
    for (const { job, error } of lastErrors) {
      expect(body.jobs.find((j: { jobId: string }) => j.jobId === job).lastError.error).toBe(error);
    }
    expect(lastErrors.map((e) => e.error).sort()).toEqual([DIGEST_ERROR, "disk full"].sort());
  });

  it("takes a window of 1 to 366 days and nothing else", async () => {
    const week = await get("/api/charts/cron?days=7");
    expect(week.body.days).toHaveLength(7);
    for (const bad of ["0", "367", "-1", "1e3", "x"]) {
      const { status, body } = await get(`/api/charts/cron?days=${bad}`);
      expect(status).toBe(400);
      expect(body.error.code).toBe("E_INVALID_ARGUMENT");
    }
  });
});

describe("GET /api/charts/deliveries", () => {
  it("gives each queue's depth and dead letters as SQL counts them", async () => {
    const { status, body } = await get("/api/charts/deliveries");
    expect(status).toBe(200);
    const rows = queueCountsBySql(dir);
    const count = (queue: string, status: string) =>
      rows.find((r) => r.queue === queue && r.status === status)?.n ?? 0;
    const queues = [...new Set(rows.filter((r) => r.status !== "sent").map((r) => r.queue))].sort();
    expect(body.queues.map((q: { queue: string }) => q.queue)).toEqual(queues);
    for (const q of body.queues) {
      expect(q).toMatchObject({
        pending: count(q.queue, "pending"),
        sending: count(q.queue, "sending"),
        unknown: count(q.queue, "unknown"),
        deadLetters: count(q.queue, "failed"),
        depth: count(q.queue, "pending") + count(q.queue, "sending") + count(q.queue, "unknown"),
      });
    }
    const email = body.queues.find((q: { queue: string }) => q.queue === EMAIL_QUEUE);
    expect(email).toMatchObject({ pending: 1, deadLetters: 2 });
    expect(email.lastDeadLetter.error).toBe(DEAD_LETTER_ERROR);
  });
});

describe("GET /assets/*", () => {
  it("serves uPlot from the installed package, and nothing else under /assets", async () => {
    const require = createRequire(import.meta.url);
    for (const [name, file, type] of [
      ["uplot.js", "uplot/dist/uPlot.iife.min.js", "text/javascript"],
      ["uplot.css", "uplot/dist/uPlot.min.css", "text/css"],
    ] as const) {
      const response = await server.app.request(`${ORIGIN}/assets/${name}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain(type);
      expect(await response.text()).toBe(readFileSync(require.resolve(file), "utf8"));
    }
    for (const path of ["/assets/uPlot.esm.js", "/assets/..%2Fpackage.json", "/assets/"]) {
      expect((await server.app.request(`${ORIGIN}${path}`)).status).toBe(404);
    }
  });
});

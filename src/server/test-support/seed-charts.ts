import { createBackup } from "../../backup/create-backup.js";
import { openStateHome, type StateHome } from "../../home.js";
import { DeliveryQueueStore } from "../../stores/global/delivery-queue-store.js";
import type { SeededHome } from "./seed-home.js";

const DAY = 86_400_000;
const HOUR = 3_600_000;
export const DIGEST_ERROR = "model timeout after 30 s";
export const DEAD_LETTER_ERROR = "403 Forbidden: bot was blocked by the user";
export const EMAIL_QUEUE = "email-digest";

export interface SeededCharts {
  /** The VFS file of `main`: bytes the storage chart must show under VFS. */
  vfsBytes: number;
  /** The image `research` was sent: moved to transcript_blobs at append. */
  blobBytes: number;
  backupId: string;
}

function job(id: string, agentId: string | null) {
  return {
    id,
    name: `${id} job`,
    agentId,
    enabled: true,
    schedule: { kind: "cron" as const, expr: "0 7 * * *" },
    payload: { kind: "agentTurn", message: `run ${id}` },
  };
}

/** Runs at noon UTC a few days back, so every run lands on the day it is meant for. */
function seedCron(home: StateHome): void {
  const noon = Math.floor(Date.now() / DAY) * DAY + 12 * HOUR;
  const at = (daysAgo: number, hours = 0) =>
    Math.min(Date.now(), noon - daysAgo * DAY + hours * HOUR);
  home.cron.add(job("digest", "main"));
  home.cron.add(job("cleanup", null));
  const runs: [string, "ok" | "error" | "skipped", number, string?][] = [
    ["digest", "ok", at(6)],
    ["digest", "skipped", at(3)],
    ["digest", "error", at(1), DIGEST_ERROR],
    ["digest", "ok", at(1, 2)],
    ["digest", "ok", at(0, -6)],
    ["cleanup", "ok", at(2)],
    ["cleanup", "ok", at(2, 1)],
    // Outside a 30-day window: counted nowhere, but still the job's last error.
    ["cleanup", "error", at(40), "disk full"],
  ];
  for (const [id, status, ranAt, error] of runs) {
    home.cron.recordRun(id, { status, ranAt, durationMs: 1200, error });
  }
}

/** A second queue: one entry waiting, two given up on (dead letters). */
function seedQueue(home: StateHome): void {
  const queue = new DeliveryQueueStore(home.db);
  for (const id of ["digest-1", "digest-2", "digest-3"]) {
    queue.enqueue(EMAIL_QUEUE, { id, payload: { to: "dana@example.org" } });
  }
  for (let i = 0; i < 2; i++) {
    const claimed = queue.claim(EMAIL_QUEUE, "mailer", { leaseMs: 60_000 });
    if (!claimed) throw new Error("seedCharts: nothing to claim");
    queue.fail(EMAIL_QUEUE, claimed.id, claimed.leaseId, DEAD_LETTER_ERROR, { permanent: true });
  }
}

function seedAgentData(
  home: StateHome,
  seeded: SeededHome,
): { vfsBytes: number; blobBytes: number } {
  const file = Buffer.alloc(300 * 1024);
  for (let i = 0; i < file.length; i++) file[i] = (i * 7919) % 251;
  home.agent("main").vfs.namespace().writeFile("/garden-plan.bin", file);
  const image = Buffer.alloc(48 * 1024, 7).toString("base64");
  home.transcripts.append(
    { agentId: "research", sessionId: seeded.researchId },
    {
      type: "message",
      message: {
        role: "user",
        content: [{ type: "image", data: image, mimeType: "image/png" }],
      },
    },
  );
  return { vfsBytes: file.length, blobBytes: image.length };
}

interface Reply {
  agentId: "main" | "research";
  daysAgo: number;
  model: string;
  usage?: Record<string, unknown>;
}

const cost = (total: number) => ({ input: total / 2, output: total / 2, total });
// Spread over days, both agents and two models; one reply records no cost (no price is
// invented for it), one has no usage at all, one is 40 days back: in a 90-day range only.
const REPLIES: Reply[] = [
  {
    agentId: "research",
    daysAgo: 40,
    model: "claude-sonnet",
    usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0, cost: cost(0.0004) },
  },
  { agentId: "research", daysAgo: 5, model: "gpt-5-mini" },
  {
    agentId: "main",
    daysAgo: 2,
    model: "gpt-5-mini",
    usage: { input: 2500, output: 410, cacheRead: 0, cacheWrite: 0 },
  },
  {
    agentId: "research",
    daysAgo: 2,
    model: "claude-sonnet",
    usage: { input: 7000, output: 1500, cacheRead: 12000, cacheWrite: 3000, cost: cost(0.0911) },
  },
  {
    agentId: "main",
    daysAgo: 0,
    model: "claude-sonnet",
    usage: { input: 1200, output: 340, cacheRead: 5000, cacheWrite: 800, cost: cost(0.0125) },
  },
  {
    agentId: "main",
    daysAgo: 0,
    model: "claude-sonnet",
    usage: { input: 300, output: 90, cacheRead: 6100, cacheWrite: 0, cost: cost(0.0031) },
  },
];

/**
 * Assistant replies with token usage and recorded cost, at noon UTC on days in the past and now
 * for today's. Appended oldest first, before anything else of the chart seed, so that the last
 * appended event is still the newest: the overview reports the last appended one.
 */
function seedUsage(home: StateHome, seeded: SeededHome): void {
  const noon = Math.floor(Date.now() / DAY) * DAY + 12 * HOUR;
  for (const [i, reply] of REPLIES.entries()) {
    const sessionId = reply.agentId === "main" ? seeded.activeId : seeded.researchId;
    const at = reply.daysAgo === 0 ? Date.now() : noon - reply.daysAgo * DAY;
    home.transcripts.append(
      { agentId: reply.agentId, sessionId },
      {
        type: "message",
        timestamp: new Date(at).toISOString(),
        message: {
          role: "assistant",
          provider: reply.model.startsWith("gpt") ? "openai" : "anthropic",
          model: reply.model,
          content: [{ type: "text", text: `reply ${i}` }],
          ...(reply.usage ? { usage: reply.usage } : {}),
        },
      },
    );
  }
}

/**
 * On a home made by `seedHome` (and `seedInbound`), what the overview's charts show: a large VFS
 * file and a transcript image (blob), two cron jobs with ok / error / skipped runs over a week, a
 * queue with dead letters, assistant replies with token usage over a few days (one without a
 * recorded cost), and a real backup whose manifest carries each snapshot's check.
 */
export async function seedCharts(seeded: SeededHome): Promise<SeededCharts> {
  const home = openStateHome({ home: seeded.home, create: false });
  try {
    seedUsage(home, seeded);
    const sizes = seedAgentData(home, seeded);
    seedCron(home);
    seedQueue(home);
    const report = await createBackup(home, { out: `${seeded.home}/backups/charts.tar.gz` });
    return { ...sizes, backupId: report.id };
  } finally {
    home.close();
  }
}

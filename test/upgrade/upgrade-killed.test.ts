import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { AGENT, assertUpgraded } from "./assert-upgraded.js";
import { buildSchema6Agent, type Schema6Fixture } from "./rich-agent.js";

/** Random kills after the first; `npm run test:trials` runs 20. */
const TRIALS = Number(process.env.AGENTSTATE_UPGRADE_KILL_TRIALS ?? 3);
const BULK_EVENTS = 30_000;
const BATCH_ROWS = 500;
/** Progress lines of the search indexing after the copy (2,000 events a batch), killable too. */
const INDEX_LINES = Math.ceil(BULK_EVENTS / 2000) + 1;
const CHILD = fileURLToPath(new URL("./open-child.mjs", import.meta.url));
const DB = join("agents", AGENT, "agent", "agent.sqlite");
const tempDir = useTempDirs();

let template: string;
let fixture: Schema6Fixture;

// Built once for every test of the file, so not one of the per-test temp dirs.
beforeAll(() => {
  requireBuild();
  template = mkdtempSync(join(tmpdir(), "agentstate-schema6-"));
  openStateHome({ home: template }).close();
  fixture = buildSchema6Agent(join(template, DB), { bulkEvents: BULK_EVENTS });
}, 120_000);
afterAll(() => rmSync(template, { recursive: true, force: true }));

/** Runs the open in a child and SIGKILLs it once it has printed `lines` progress lines. */
function killAfterLines(home: string, lines: number): Promise<{ seen: string[]; killed: boolean }> {
  const child: ChildProcess = spawn(process.execPath, [CHILD, home, AGENT], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, AGENTSTATE_UPGRADE_BATCH_ROWS: String(BATCH_ROWS) },
  });
  const seen: string[] = [];
  let killed = false;
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    seen.push(line);
    if (!killed && seen.length >= lines && line !== "opened") killed = child.kill("SIGKILL");
  });
  return new Promise((resolve) => child.on("close", () => resolve({ seen, killed })));
}

/** Runs the open in a child to its end: its exit code and what it printed. */
function openInChild(home: string): Promise<{ status: number | null; out: string }> {
  const child = spawn(process.execPath, [CHILD, home, AGENT], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, AGENTSTATE_UPGRADE_BATCH_ROWS: String(BATCH_ROWS) },
  });
  let out = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
  });
  child.stderr.on("data", (chunk) => {
    out += chunk;
  });
  return new Promise((resolve) => child.on("close", (status) => resolve({ status, out })));
}

function pendingCopy(home: string): boolean {
  const raw = openRawSqlite(join(home, DB), { readonly: true });
  try {
    const old = raw.prepare("SELECT 1 FROM sqlite_master WHERE name = 'transcript_events_v6'");
    return old.get() !== undefined;
  } finally {
    raw.close();
  }
}

describe("an upgrade killed with SIGKILL", () => {
  it(
    "resumes on the next open with nothing lost or doubled, wherever it was stopped",
    async () => {
      const batches = Math.ceil(BULK_EVENTS / BATCH_ROWS);
      for (let trial = 0; trial < TRIALS; trial++) {
        const home = tempDir();
        cpSync(template, home, { recursive: true });
        // The first trial stops right after the first committed batch; the others anywhere in
        // the copy or in the search indexing that follows it.
        const at = trial === 0 ? 1 : 1 + Math.floor(Math.random() * (batches + INDEX_LINES));
        const { seen, killed } = await killAfterLines(home, at);
        expect(seen[0], `trial ${trial}`).toMatch(/^transcript events \d+\/\d+$/);
        if (trial === 0) {
          expect(killed).toBe(true);
          expect(pendingCopy(home)).toBe(true);
        }
        assertUpgraded(home, join(home, DB), fixture);
      }
    },
    120_000 + TRIALS * 60_000,
  );
});

describe("two processes opening a schema-6 database at once", () => {
  it(
    "both open it, and it is upgraded once",
    async () => {
      for (let trial = 0; trial < TRIALS; trial++) {
        const home = tempDir();
        cpSync(template, home, { recursive: true });
        const results = await Promise.all([
          openInChild(home),
          openInChild(home),
          openInChild(home),
        ]);
        for (const { status, out } of results) {
          expect(out, `trial ${trial}`).toMatch(/opened\n$/);
          expect(status).toBe(0);
        }
        assertUpgraded(home, join(home, DB), fixture);
      }
    },
    120_000 + TRIALS * 60_000,
  );
});

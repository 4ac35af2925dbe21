// `agentstate doctor --fix` killed with SIGKILL at a random moment while it rebuilds a damaged cold
// index: the agent is left with its old file or the new one (never a file short of what its claims
// say), and the next `doctor --fix` leaves search answering exactly as before the damage.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { checkColdIndexes } from "../../src/doctor/cold-index-health.js";
import {
  AGENT_DB,
  buildColdHome,
  COLD_INDEX,
  COLD_INDEX_DAMAGES,
  claimsOf,
  coldIndexIntegrity,
  damageColdIndex,
  searchAll,
} from "../../src/doctor/test-support/cold-homes.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

/** Random kills; `npm run test:trials` runs 20. */
const TRIALS = Number(process.env.AGENTSTATE_COLD_REBUILD_KILL_TRIALS ?? 3);
/** Enough events that the rebuild is most of the run: about 0.5 s of a 1 s run. */
const EVENTS_PER_SESSION = 5000;
const tempDir = useTempDirs();

let template: string;
let expected: ReturnType<typeof searchAll>;
let claims: unknown[];
/** How long `doctor --fix` runs when it finds nothing to do, and when it rebuilds. */
let startupMs = 0;
let rebuildMs = 0;

function copyOfTemplate(): string {
  const home = tempDir();
  cpSync(template, home, { recursive: true });
  return home;
}

/** `doctor --fix`, killed `killAfterMs` after it started (or run to its end when null). */
function runFix(
  home: string,
  killAfterMs: number | null,
): Promise<{ killed: boolean; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [CLI, "doctor", "--fix", "--home", home], {
    stdio: "ignore",
    env: { ...process.env, AGENTSTATE_HOME: "" },
  });
  let killed = false;
  const timer =
    killAfterMs === null
      ? undefined
      : setTimeout(() => (killed = child.kill("SIGKILL")), killAfterMs);
  return new Promise((resolve, reject) =>
    child.on("close", (status) => {
      clearTimeout(timer);
      if (!killed && status !== 0) reject(new Error(`doctor --fix exited with ${status}`));
      resolve({ killed, ms: Date.now() - started });
    }),
  );
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
}

function agentIntegrity(home: string): unknown {
  const raw = openRawSqlite(join(home, AGENT_DB), { readonly: true });
  try {
    return raw.pragma("integrity_check", { simple: true });
  } finally {
    raw.close();
  }
}

/** The old file untouched (or still gone), or a new one its claims hold whole: nothing between. */
function expectOldOrNew(home: string, damaged: Buffer | null, where: string): "old" | "new" {
  const path = join(home, COLD_INDEX);
  const now = existsSync(path) ? readFileSync(path) : null;
  if (now === null ? damaged === null : damaged?.equals(now)) return "old";
  expect(checkColdIndexes(home), where).toEqual([]);
  expect(claimsOf(home), where).toEqual(claims);
  return "new";
}

beforeAll(async () => {
  requireBuild();
  template = mkdtempSync(join(tmpdir(), "agentstate-cold-rebuild-"));
  buildColdHome(template, EVENTS_PER_SESSION);
  expected = searchAll(template);
  claims = claimsOf(template);
  // Medians of three: one run slowed by a passing load would aim every kill too early or too late.
  const startups: number[] = [];
  const rebuilds: number[] = [];
  for (let run = 0; run < 3; run++) {
    startups.push((await runFix(copyOfTemplate(), null)).ms);
    const damaged = copyOfTemplate();
    damageColdIndex(damaged, "garbage");
    rebuilds.push((await runFix(damaged, null)).ms);
  }
  startupMs = median(startups);
  rebuildMs = median(rebuilds);
}, 240_000);
afterAll(() => rmSync(template, { recursive: true, force: true }));

describe("a cold index rebuild killed with SIGKILL", () => {
  it(
    "leaves the old file or the new one, and the next doctor --fix makes search answer as before",
    async () => {
      const outcomes = { old: 0, new: 0 };
      for (let trial = 0; trial < TRIALS; trial++) {
        const damage = COLD_INDEX_DAMAGES[trial % COLD_INDEX_DAMAGES.length] as string;
        const where = `trial ${trial} (${damage})`;
        const home = copyOfTemplate();
        damageColdIndex(home, damage as (typeof COLD_INDEX_DAMAGES)[number]);
        const path = join(home, COLD_INDEX);
        const damaged = existsSync(path) ? readFileSync(path) : null;
        // Mostly after the start-up, where the rebuild runs.
        const from = startupMs * 0.8;
        await runFix(home, Math.floor(from + Math.random() * Math.max(1, rebuildMs - from)));
        outcomes[expectOldOrNew(home, damaged, where)]++;

        const rerun = cli(["doctor", "--fix", "--home", home]);
        expect(rerun.status, `${where}: ${rerun.stderr}`).toBe(0);
        expect(searchAll(home), where).toEqual(expected);
        expect(claimsOf(home), where).toEqual(claims);
        expect(coldIndexIntegrity(home), where).toBe("ok");
        expect(agentIntegrity(home), where).toBe("ok");
        expect(cli(["doctor", "--home", home]).status, where).toBe(0);
        // No draft of a killed run is left beside it.
        const drafts = readdirSync(dirname(path)).filter((name) => name.includes(".new-"));
        expect(drafts, where).toEqual([]);
      }
      // Kills land inside the rebuild, not only before or after it.
      if (TRIALS >= 10) {
        expect(Math.min(outcomes.old, outcomes.new), JSON.stringify(outcomes)).toBeGreaterThan(0);
      }
    },
    180_000 + TRIALS * 30_000,
  );
});

// `agentstate doctor` finds an agent's cold index file gone or damaged, or short of the rows the
// agent database claims there; `doctor --fix` rebuilds it from the cold sessions' archives, and
// search, backups and the next doctor run are as before the damage. Run on the built CLI.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { checkColdIndexes } from "../../src/doctor/cold-index-health.js";
import {
  AGENT,
  buildColdHome,
  CODE_OF_DAMAGE,
  COLD_INDEX,
  COLD_INDEX_DAMAGES,
  type ColdIndexDamage,
  claimsOf,
  coldIndexIntegrity,
  damageColdIndex,
  searchAll,
} from "../../src/doctor/test-support/cold-homes.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

interface ProblemJson {
  agentId: string;
  path: string;
  code: string;
  message: string;
}

interface RepairJson {
  agentId: string;
  path: string;
  code: string;
  status: string;
  keptAt: string | null;
  sessions: number;
}

/** `doctor` (text and --json): exit 4, the code, the agent and the file named. */
function expectReported(home: string, damage: ColdIndexDamage): void {
  const path = join(home, COLD_INDEX);
  const text = cli(["doctor", "--home", home]);
  expect(text.status).toBe(4);
  expect(text.stdout).toContain(
    `${CODE_OF_DAMAGE[damage]}: agent "${AGENT}": its cold index ${path}`,
  );
  expect(text.stdout).toContain("agentstate doctor --fix");
  const json = cli(["doctor", "--json", "--home", home]);
  expect(json.status).toBe(4);
  expect(json.stderr).toBe("");
  const { coldIndexes } = JSON.parse(json.stdout) as { coldIndexes: ProblemJson[] };
  expect(coldIndexes.map((p) => [p.agentId, p.path, p.code])).toEqual([
    [AGENT, path, CODE_OF_DAMAGE[damage]],
  ]);
  expect(coldIndexes[0]?.message).toContain(path);
}

/** `doctor --fix`, in text or --json: the cold index rebuilt, the replaced file's place named. */
function fix(home: string, damage: ColdIndexDamage, json: boolean): void {
  const path = join(home, COLD_INDEX);
  const damaged = existsSync(path) ? readFileSync(path) : null;
  const run = cli(["doctor", "--fix", ...(json ? ["--json"] : []), "--home", home]);
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  let keptAt: string | null;
  if (json) {
    const [repair, ...more] = (JSON.parse(run.stdout) as { coldIndexes: RepairJson[] }).coldIndexes;
    expect(more).toEqual([]);
    expect(repair).toMatchObject({
      agentId: AGENT,
      path,
      code: CODE_OF_DAMAGE[damage],
      status: "rebuilt",
    });
    expect(repair?.sessions).toBe(4);
    keptAt = repair?.keptAt ?? null;
  } else {
    expect(run.stdout).toContain(`Rebuilt the cold search index of agent "${AGENT}"`);
    keptAt = /kept at (\S+)/.exec(run.stdout)?.[1] ?? null;
  }
  if (damaged === null) expect(keptAt).toBeNull();
  else expect(readFileSync(keptAt as string).equals(damaged)).toBe(true);
}

function expectBackupVerifies(home: string): void {
  const archive = join(tempDir(), "after.tar.gz");
  expect(cli(["backup", "create", "--out", archive, "--home", home]).status).toBe(0);
  const verified = cli(["backup", "verify", archive]);
  expect(verified.stdout + verified.stderr).not.toContain("lacks");
  expect(verified.status).toBe(0);
}

function expectNothingReported(home: string): void {
  const text = cli(["doctor", "--home", home]);
  expect(text.status).toBe(0);
  expect(text.stdout).not.toContain("cold-index");
  const json = cli(["doctor", "--json", "--home", home]);
  expect(json.status).toBe(0);
  expect(JSON.parse(json.stdout)).not.toHaveProperty("coldIndexes");
}

/** Each query's hits as "session/seq", sorted. */
function eventsFound(hits: ReturnType<typeof searchAll>): Record<string, string[]> {
  const found = Object.entries(hits).map(([query, list]) => [
    query,
    list.map((hit) => `${hit.sessionId}/${hit.seq}`).sort(),
  ]);
  return Object.fromEntries(found);
}

describe("agentstate doctor on a damaged cold index", () => {
  COLD_INDEX_DAMAGES.forEach((damage, i) => {
    it(`(${damage}) reports it, --fix rebuilds it, and search finds what it found before`, () => {
      const home = tempDir();
      buildColdHome(home);
      const expected = searchAll(home);
      const claims = claimsOf(home);
      expectNothingReported(home);
      damageColdIndex(home, damage);

      expectReported(home, damage);
      fix(home, damage, i % 2 === 1);
      expect(searchAll(home)).toEqual(expected);
      expect(claimsOf(home)).toEqual(claims);
      expect(coldIndexIntegrity(home)).toBe("ok");
      expectBackupVerifies(home);
      expectNothingReported(home);

      // The new file takes the next move's rows like the old one did (the same events are found;
      // their scores move with the statistics of the index they are ranked in).
      const state = openStateHome({ home });
      try {
        state.agent(AGENT).cold.move("h0");
      } finally {
        state.close();
      }
      expect(eventsFound(searchAll(home))).toEqual(eventsFound(expected));
      expect(checkColdIndexes(home)).toEqual([]);
    });
  });
});

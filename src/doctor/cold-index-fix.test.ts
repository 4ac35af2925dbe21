import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { openStateHome } from "../home.js";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { repairColdIndexes } from "./cold-index-fix.js";
import { checkColdIndexes } from "./cold-index-health.js";
import { rebuildColdIndex } from "./cold-index-rebuild.js";
import {
  AGENT,
  AGENT_DB,
  buildColdHome,
  CODE_OF_DAMAGE,
  COLD_INDEX,
  COLD_INDEX_DAMAGES,
  claimsOf,
  coldIndexIntegrity,
  damageColdIndex,
  searchAll,
} from "./test-support/cold-homes.js";

const tempDir = useTempDirs();

/** The files of the agent's cold directory that are not archives. */
function coldIndexFiles(home: string): string[] {
  return readdirSync(dirname(join(home, COLD_INDEX)))
    .filter((name) => !name.endsWith(".cold"))
    .sort();
}

describe("a damaged cold index", () => {
  for (const damage of COLD_INDEX_DAMAGES) {
    it(`(${damage}) is found, rebuilt from the archives, and searched as before`, () => {
      const home = tempDir();
      buildColdHome(home);
      const expected = searchAll(home);
      const claims = claimsOf(home);
      expect(checkColdIndexes(home)).toEqual([]);
      damageColdIndex(home, damage);
      const damaged = existsSync(join(home, COLD_INDEX))
        ? readFileSync(join(home, COLD_INDEX))
        : null;

      const [problem, ...others] = checkColdIndexes(home);
      expect(others).toEqual([]);
      expect(problem).toMatchObject({ agentId: AGENT, code: CODE_OF_DAMAGE[damage], claims: 4 });
      expect(problem?.path).toBe(join(home, COLD_INDEX));
      expect(problem?.message).toContain(`agent "${AGENT}"`);
      expect(problem?.message).toContain(join(home, COLD_INDEX));

      const [repair] = repairColdIndexes(home, { now: Date.UTC(2030, 0, 2) });
      expect(repair).toMatchObject({
        status: "rebuilt",
        code: CODE_OF_DAMAGE[damage],
        sessions: 4,
        error: null,
      });
      expect(searchAll(home)).toEqual(expected);
      expect(claimsOf(home)).toEqual(claims);
      expect(coldIndexIntegrity(home)).toBe("ok");
      expect(checkColdIndexes(home)).toEqual([]);
      if (damaged === null) {
        expect(repair?.keptAt).toBeNull();
        expect(coldIndexFiles(home)).toEqual(["index.sqlite"]);
      } else {
        const keptAt = `${join(home, COLD_INDEX)}.damaged-2030-01-02T00-00-00-000Z`;
        expect(repair?.keptAt).toBe(keptAt);
        expect(readFileSync(keptAt).equals(damaged)).toBe(true);
        expect(modeOf(statSync(keptAt))).toBe(0o600);
        expect(coldIndexFiles(home)).toEqual([
          "index.sqlite",
          "index.sqlite.damaged-2030-01-02T00-00-00-000Z",
        ]);
      }
      expect(modeOf(statSync(join(home, COLD_INDEX)))).toBe(0o600);
    });
  }
});

describe("checking cold indexes", () => {
  it("finds nothing in a home whose agents never moved a session cold, and creates no file", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    state
      .agent(AGENT)
      .transcripts.append("s", { type: "message", message: { role: "user", content: "hi" } });
    state.close();
    expect(checkColdIndexes(home)).toEqual([]);
    expect(repairColdIndexes(home)).toEqual([]);
    expect(existsSync(join(home, COLD_INDEX))).toBe(false);
  });

  it("reports a damaged file no claim relies on (a move would fail on it), and replaces it", () => {
    const home = tempDir();
    buildColdHome(home);
    const state = openStateHome({ home });
    const agent = state.agent(AGENT);
    for (const id of ["s0", "s1", "s2", "s3"]) agent.lifecycle.delete(id);
    agent.cold.purgeIndex();
    state.close();
    writeFileSync(join(home, COLD_INDEX), "not a database at all");
    expect(checkColdIndexes(home).map((p) => [p.code, p.claims])).toEqual([
      ["cold-index-damaged", 0],
    ]);
    expect(repairColdIndexes(home).map((r) => [r.status, r.sessions, r.rows])).toEqual([
      ["rebuilt", 0, 0],
    ]);
    expect(coldIndexIntegrity(home)).toBe("ok");
    expect(checkColdIndexes(home)).toEqual([]);
  });
});

describe("a rebuild", () => {
  it("sets a claim that counted its rows wrong to what the new file holds", () => {
    const home = tempDir();
    buildColdHome(home);
    const expected = searchAll(home);
    const claims = claimsOf(home);
    const raw = openRawSqlite(join(home, AGENT_DB));
    raw.exec("UPDATE cold_index_claims SET rows = rows + 5, text_bytes = 1 WHERE session_no = 1");
    raw.close();
    expect(checkColdIndexes(home).map((p) => p.code)).toEqual(["cold-index-uncovered"]);
    expect(repairColdIndexes(home).map((r) => r.status)).toEqual(["rebuilt"]);
    expect(claimsOf(home)).toEqual(claims);
    expect(searchAll(home)).toEqual(expected);
  });

  it("fails naming the archive it cannot read, and leaves the file and the claims as they were", () => {
    const home = tempDir();
    buildColdHome(home);
    damageColdIndex(home, "session-rows-deleted");
    const before = readFileSync(join(home, COLD_INDEX));
    const claims = claimsOf(home);
    const dir = dirname(join(home, COLD_INDEX));
    const archive = readdirSync(dir).find((name) => name.endsWith(".cold")) as string;
    rmSync(join(dir, archive));
    const [repair] = repairColdIndexes(home);
    expect(repair).toMatchObject({ status: "failed", keptAt: null });
    expect(repair?.error).toMatch(/^E_CORRUPT: the archive of cold session s\d is missing/);
    expect(readFileSync(join(home, COLD_INDEX)).equals(before)).toBe(true);
    expect(claimsOf(home)).toEqual(claims);
    expect(coldIndexFiles(home)).toEqual(["index.sqlite"]);
  });

  // s0 is read first (the claims, read again before the swap, have changed), s3 last (its archive
  // is gone by the time it is read).
  for (const restored of ["s0", "s3"]) {
    it(`refuses to put its file in place when a cold session (${restored}) was restored while it was built`, () => {
      const home = tempDir();
      buildColdHome(home);
      damageColdIndex(home, "session-rows-deleted");
      const before = readFileSync(join(home, COLD_INDEX));
      const state = openStateHome({ home });
      try {
        const agent = state.agent(AGENT);
        let appended = false;
        const restoreOnce = () => {
          if (appended) return;
          appended = true;
          const event = { type: "message", message: { role: "user", content: "hi" } };
          agent.transcripts.append(restored, event);
        };
        const error = (() => {
          try {
            rebuildColdIndex(agent, { onProgress: restoreOnce });
          } catch (e) {
            return e;
          }
        })();
        expect(isStateError(error, "E_CONFLICT")).toBe(true);
        expect((error as Error).message).toContain("run doctor --fix again");
      } finally {
        state.close();
      }
      expect(readFileSync(join(home, COLD_INDEX)).equals(before)).toBe(true);
      expect(coldIndexFiles(home)).toEqual(["index.sqlite"]);
    });
  }
});

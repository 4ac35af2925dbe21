import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { chooseDriver, supportsInertModules } from "../db/driver-choice.js";
import { sha256File } from "../doctor/hash.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { checkSnapshot, joinChecks } from "./snapshot-check.js";
import { DAMAGES, damagedCopy, useCheckableDatabase } from "./test-support/damaged-databases.js";

const tempDir = useTempDirs();
const checkable = useCheckableDatabase();
let base: string;
beforeAll(() => {
  base = checkable();
});

function splitCheck(path: string): string {
  return joinChecks(checkSnapshot(path, "tables"), checkSnapshot(path, "fulltext")).integrityCheck;
}

/** node:sqlite cannot make FTS5 inert, so there a `tables` half is refused, by name. */
const splits = supportsInertModules(chooseDriver());
const REFUSED_HALF =
  /^cannot be checked: the node:sqlite driver cannot define virtual-table modules/;

describe("checkSnapshot", () => {
  it("finds a sound database ok, whole and in each half", () => {
    expect(checkSnapshot(base, "whole").integrityCheck).toBe("ok");
    expect(checkSnapshot(base, "fulltext").integrityCheck).toBe("ok");
    if (!splits) {
      expect(checkSnapshot(base, "tables").integrityCheck).toMatch(REFUSED_HALF);
      return;
    }
    expect(checkSnapshot(base, "tables").integrityCheck).toBe("ok");
    expect(splitCheck(base)).toBe("ok");
  });

  for (const damage of DAMAGES) {
    it(`reports ${damage.name}, whole and split, in the half that looks at it`, () => {
      const path = damagedCopy(base, join(tempDir(), "damaged.sqlite"), damage);
      expect(checkSnapshot(path, "whole").integrityCheck).toMatch(damage.expected);
      if (!splits) {
        expect(checkSnapshot(path, "tables").integrityCheck).toMatch(REFUSED_HALF);
        if (damage.seenBy === "fulltext") {
          expect(checkSnapshot(path, "fulltext").integrityCheck).toMatch(damage.expected);
        }
        return;
      }
      const halves = {
        tables: checkSnapshot(path, "tables").integrityCheck,
        fulltext: checkSnapshot(path, "fulltext").integrityCheck,
      };
      const other = damage.seenBy === "tables" ? "fulltext" : "tables";
      expect(halves[damage.seenBy]).toMatch(damage.expected);
      expect(halves[other]).toBe("ok");
      expect(splitCheck(path)).toMatch(damage.expected);
    });
  }

  it("checks CHECK constraints, which a read-only connection would skip", () => {
    const damage = DAMAGES.find((d) => d.expected.source.includes("CHECK"));
    const path = damagedCopy(base, join(tempDir(), "check.sqlite"), damage as never);
    const before = sha256File(path);
    expect(checkSnapshot(path).integrityCheck).toBe("CHECK constraint failed in t");
    expect(sha256File(path)).toBe(before);
  });

  it("refuses a file with a journal beside it, and leaves both as they were", () => {
    const path = join(tempDir(), "snap.sqlite");
    writeFileSync(path, readFileSync(base));
    writeFileSync(`${path}-journal`, Buffer.alloc(4096, 7));
    const [file, journal] = [sha256File(path), sha256File(`${path}-journal`)];
    const check = checkSnapshot(path);
    expect(check.integrityCheck).toMatch(
      /^cannot be checked: .*snap\.sqlite-journal lies beside it/,
    );
    expect([sha256File(path), sha256File(`${path}-journal`)]).toEqual([file, journal]);
  });

  it("reports a file that is not a database, or is missing, instead of throwing", () => {
    const junk = join(tempDir(), "junk.sqlite");
    writeFileSync(junk, Buffer.alloc(8192, 1));
    for (const part of ["whole", "tables", "fulltext"] as const) {
      expect(checkSnapshot(junk, part).integrityCheck).toMatch(/^cannot be checked: /);
      expect(checkSnapshot(join(tempDir(), "absent.sqlite"), part).schemaVersion).toBeNull();
    }
    expect(splitCheck(junk)).toMatch(/^cannot be checked: /);
  });

  it("split or whole, the verdict on a randomly damaged file is the same", async () => {
    const bytes = readFileSync(base);
    const edits = fc.array(
      fc.record({
        at: fc.nat({ max: bytes.length - 1 }),
        value: fc.integer({ min: 0, max: 255 }),
      }),
      { minLength: 1, maxLength: 4 },
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(edits, async (changes) => {
        const damaged = Buffer.from(bytes);
        for (const { at, value } of changes) damaged[at] = value;
        const path = join(tempDir(), `random-${run++}.sqlite`);
        writeFileSync(path, damaged);
        const whole = checkSnapshot(path, "whole").integrityCheck;
        if (splits) expect(splitCheck(path) === "ok").toBe(whole === "ok");
        else expect(checkSnapshot(path, "tables").integrityCheck).toMatch(/^cannot be checked: /);
      }),
      { numRuns: 80 },
    );
  });
});

describe("joinChecks", () => {
  const ok = {
    integrityCheck: "ok",
    schemaVersion: 6,
    registeredAgents: { main: "a/main.sqlite" },
  };

  it("is ok only when both halves are, and keeps the schema facts of the tables half", () => {
    const fulltext = { integrityCheck: "ok", schemaVersion: null, registeredAgents: null };
    expect(joinChecks(ok, fulltext)).toEqual(ok);
    const bad = { ...fulltext, integrityCheck: "malformed inverted index for FTS5 table main.f" };
    expect(joinChecks(ok, bad)).toEqual({ ...ok, integrityCheck: bad.integrityCheck });
    expect(joinChecks({ ...ok, integrityCheck: "Page 9: never used" }, bad).integrityCheck).toBe(
      "Page 9: never used; malformed inverted index for FTS5 table main.f",
    );
  });
});

// A backup carries each agent's cold index file (the search rows of its cold events) as a snapshot
// beside the agent's, holding every row the agent snapshot claims; verify and restore check that.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/create-backup.js";
import type { BackupManifest } from "../../src/backup/manifest.js";
import { restoreBackup } from "../../src/backup/restore-backup.js";
import {
  type RawEntry,
  readEntries,
  replaceBody,
  writeEntries,
} from "../../src/backup/test-support/archives.js";
import { verifyBackup } from "../../src/backup/verify-backup.js";
import { isStateError } from "../../src/db/errors.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { collectGarbage } from "../../src/gc/collect-garbage.js";
import { openStateHome, type StateHome } from "../../src/home.js";
import { modeOf, useTempDirs } from "../../src/test-support/temp-dir.js";

const tempDir = useTempDirs();
const COLD_INDEX = "agents/main/agent/cold/index.sqlite";
const COLD_ENTRY = `databases/${COLD_INDEX}`;
const AGENT_ENTRY = "databases/agents/main/agent/agent.sqlite";

/** Appends `n` events to a session, each with a word of its own; returns those words. */
function fill(home: StateHome, agentId: string, sessionId: string, n: number): string[] {
  const agent = home.agent(agentId);
  const words: string[] = [];
  for (let i = 0; i < n; i++) {
    const word = `${agentId}${sessionId}x${i}`;
    words.push(word);
    agent.transcripts.append(sessionId, {
      type: "message",
      message: { role: "user", content: `walrus ${word}` },
    });
  }
  return words;
}

/** Every hit of `query` in the agent, as "session/event id", sorted. */
function hitsOf(home: StateHome, agentId: string, query: string, sessionId?: string): string[] {
  const options = sessionId === undefined ? { limit: 500 } : { limit: 500, sessionId };
  const hits = home.agent(agentId).search.search(query, options);
  return hits.map((hit) => `${hit.sessionId}/${hit.eventId}`).sort();
}

/** A home whose agent "main" has two cold sessions: s1 (30 events) and s2 (20). */
function coldHome(): { path: string; words: string[] } {
  const path = join(tempDir(), "home");
  const home = openStateHome({ home: path });
  const words = [...fill(home, "main", "s1", 30), ...fill(home, "main", "s2", 20)];
  home.agent("main").cold.move("s1");
  home.agent("main").cold.move("s2");
  home.close();
  return { path, words };
}

async function refusedRestore(archive: string): Promise<string> {
  const error = await restoreBackup(archive, { home: join(tempDir(), "restored") }).catch(
    (e: unknown) => e,
  );
  expect(isStateError(error, "E_CORRUPT")).toBe(true);
  return (error as Error).message;
}

describe("a backup of a home with cold sessions, restored into a new home", () => {
  it("finds every cold event by search exactly once, and nothing of a deleted session", async () => {
    const source = join(tempDir(), "home");
    const home = openStateHome({ home: source });
    const words: Record<string, string[]> = {};
    for (const id of ["s0", "s1", "s2", "s3"]) words[id] = fill(home, "main", id, 12);
    words.r0 = fill(home, "research", "r0", 15);
    words.p0 = fill(home, "plain", "p0", 5);
    const main = home.agent("main");
    for (const id of ["s0", "s1", "s2", "s3"]) main.cold.move(id);
    home.agent("research").cold.move("r0");
    // Hot again: its rows stay in the cold index, claimed, and are also in the hot index.
    main.transcripts.append("s1", {
      type: "message",
      message: { role: "user", content: "walrus mainwarm" },
    });
    words.s1 = [...(words.s1 as string[]), "mainwarm"];
    expect(main.cold.isCold("s1")).toBe(false);
    // Deleted: its rows stay in the cold index unclaimed, as no gc has run.
    expect(main.lifecycle.delete("s2")).toBe(true);
    const expected = {
      main: hitsOf(home, "main", "walrus"),
      research: hitsOf(home, "research", "walrus"),
      plain: hitsOf(home, "plain", "walrus"),
    };
    expect(expected.main).toHaveLength(12 + 13 + 12);
    expect(expected.research).toHaveLength(15);
    home.close();

    const { archive, manifest } = await createBackup(source, { out: join(tempDir(), "b.tar.gz") });
    const coldIndexes = manifest.databases.filter((db) => db.role === "cold-index");
    expect(coldIndexes.map((db) => [db.agentId, db.homePath, db.integrityCheck])).toEqual([
      ["main", COLD_INDEX, "ok"],
      ["research", "agents/research/agent/cold/index.sqlite", "ok"],
    ]);
    expect(manifest.skipped).toEqual([]);
    expect((await verifyBackup(archive)).ok).toBe(true);

    const target = join(tempDir(), "restored");
    await restoreBackup(archive, { home: target });
    expect(modeOf(statSync(join(target, COLD_INDEX)))).toBe(0o600);
    expect(modeOf(statSync(join(target, "agents/main/agent/cold")))).toBe(0o700);
    const restored = openStateHome({ home: target });
    try {
      for (const agentId of ["main", "research", "plain"] as const) {
        const hits = hitsOf(restored, agentId, "walrus");
        expect(new Set(hits).size).toBe(hits.length);
        expect(hits).toEqual(expected[agentId]);
      }
      // Each event by its own word, once, in its session; the deleted session's, never.
      for (const [sessionId, ofSession] of Object.entries(words)) {
        const agentId = { s: "main", r: "research", p: "plain" }[sessionId[0] as "s" | "r" | "p"];
        for (const word of ofSession) {
          const hits = hitsOf(restored, agentId, word);
          expect(hits, word).toHaveLength(sessionId === "s2" ? 0 : 1);
          if (sessionId !== "s2") expect(hitsOf(restored, agentId, word, sessionId)).toEqual(hits);
        }
      }
      expect(restored.agent("main").cold.isCold("s0")).toBe(true);
    } finally {
      restored.close();
    }
  });
});

describe("a backup's cold index snapshot", () => {
  it("is taken again with its agent's when gc drops the rows of a session deleted in between", async () => {
    const { path: source, words } = coldHome();
    const home = openStateHome({ home: source });
    let deleted = 0;
    const { archive, manifest } = await createBackup(home, {
      out: join(tempDir(), "b.tar"),
      onProgress: (progress) => {
        // After main's snapshot (which claims s2's rows), before its cold index's.
        if (progress.phase !== "snapshot" || progress.entry !== COLD_INDEX || deleted > 0) return;
        deleted++;
        const main = home.agent("main");
        expect(main.lifecycle.delete("s2")).toBe(true);
        expect(main.cold.index.sessions()).toHaveLength(2);
        expect(collectGarbage(home).databases.every((db) => db.error === undefined)).toBe(true);
        expect(main.cold.index.sessions()).toHaveLength(1);
      },
    });
    home.close();
    expect(deleted).toBe(1);
    // The first agent snapshot named s2, whose rows the cold index had lost by its snapshot: only
    // the second pair went into the backup.
    expect(manifest.skipped).toEqual([]);
    expect(manifest.databases.map((db) => db.homePath)).toContain(COLD_INDEX);
    expect((await verifyBackup(archive)).ok).toBe(true);

    const target = join(tempDir(), "restored");
    await restoreBackup(archive, { home: target });
    const restored = openStateHome({ home: target });
    try {
      const hits = hitsOf(restored, "main", "walrus");
      expect(hits).toHaveLength(30);
      expect(hits.every((hit) => hit.startsWith("s1/"))).toBe(true);
      expect(hitsOf(restored, "main", words[0] as string)).toHaveLength(1);
      expect(hitsOf(restored, "main", words[30] as string)).toEqual([]);
    } finally {
      restored.close();
    }
  });

  it("is left out, with its reason, when the home's file lacks claimed rows at every attempt", async () => {
    const { path: source } = coldHome();
    const raw = openRawSqlite(join(source, COLD_INDEX));
    raw.exec("DELETE FROM cold_fts WHERE rowid = (SELECT min(rowid) FROM cold_fts)");
    raw.close();

    const { archive, manifest } = await createBackup(source, { out: join(tempDir(), "b.tar") });
    expect(manifest.databases.map((db) => db.homePath)).not.toContain(COLD_INDEX);
    const skip = manifest.skipped.find((s) => s.homePath === COLD_INDEX);
    expect(skip?.reason).toMatch(
      /^its snapshot lacks search rows the agent database claims for 1 of its 2 cold sessions \(session \d+: 29 of 30 rows\), taken 3 times with its agent's$/,
    );
    const report = await verifyBackup(archive);
    expect(report.ok).toBe(false);
    expect(report.firstProblem).toBe(
      `entry "${AGENT_ENTRY}": it claims search rows of 2 cold sessions in its cold index (${COLD_INDEX}), which is not in the backup`,
    );
  });

  it("is left out when the home has no cold index file, and verify and restore name it", async () => {
    const { path: source } = coldHome();
    rmSync(join(source, COLD_INDEX));

    const { archive, manifest } = await createBackup(source, { out: join(tempDir(), "b.tar") });
    expect(manifest.skipped).toEqual([
      {
        homePath: COLD_INDEX,
        reason:
          "the agent database claims search rows of 2 cold sessions in it, but it is missing from the home",
      },
    ]);
    const report = await verifyBackup(archive);
    expect(report.ok).toBe(false);
    expect(report.firstProblem).toContain(COLD_INDEX);
    expect(await refusedRestore(archive)).toContain(COLD_INDEX);
  });
});

describe("backup verify, on a backup's cold index", () => {
  let work: string;
  let archive: string;

  beforeAll(async () => {
    // One genuine archive, edited copy by copy (useTempDirs empties its directories per test).
    work = mkdtempSync(join(tmpdir(), "agentstate-cold-verify-"));
    const home = join(work, "home");
    const opened = openStateHome({ home });
    fill(opened, "main", "s1", 30);
    fill(opened, "main", "s2", 20);
    opened.agent("main").cold.move("s1");
    opened.agent("main").cold.move("s2");
    opened.close();
    archive = (await createBackup(home, { out: join(work, "good.tar.gz") })).archive;
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** The archive rewritten by `edit`, its manifest kept consistent with the entries edited. */
  function edited(edit: (entries: RawEntry[], manifest: BackupManifest) => RawEntry[]): string {
    const entries = readEntries(archive);
    const last = entries.at(-1) as RawEntry;
    const manifest = JSON.parse(last.body.toString("utf8")) as BackupManifest;
    const kept = edit(entries.slice(0, -1), manifest);
    const out = join(tempDir(), "edited.tar.gz");
    writeEntries(out, [...kept, { path: last.path, body: Buffer.from(JSON.stringify(manifest)) }]);
    return out;
  }

  it("passes the genuine archive, the cold index checked as a database", async () => {
    const report = await verifyBackup(archive);
    expect(report.ok).toBe(true);
    expect(report.entries.find((e) => e.path === COLD_ENTRY)).toMatchObject({
      kind: "database",
      role: "cold-index",
      agentId: "main",
      schemaVersion: 1,
      integrityCheck: "ok",
      status: "ok",
    });
  });

  it("names a cold index that lacks rows its agent snapshot claims, and restore refuses it", async () => {
    const file = edited((entries, manifest) =>
      replaceBody(entries, COLD_ENTRY, (body) => {
        const copy = join(tempDir(), "index.sqlite");
        writeFileSync(copy, body);
        const raw = openRawSqlite(copy);
        raw.exec("DELETE FROM cold_fts WHERE rowid = (SELECT max(rowid) FROM cold_fts)");
        raw.close();
        const changed = readFileSync(copy);
        const db = manifest.databases.find((d) => d.snapshotPath === COLD_ENTRY);
        Object.assign(db ?? {}, { bytes: changed.length, sha256: sha256Of(changed) });
        return changed;
      }),
    );
    const report = await verifyBackup(file);
    expect(report.ok).toBe(false);
    expect(report.firstProblem).toMatch(
      new RegExp(
        `^entry "${COLD_ENTRY}": it lacks search rows the agent database claims for 1 of its 2 cold sessions \\(session \\d+: 19 of 20 rows\\)$`,
      ),
    );
    expect(await refusedRestore(file)).toContain(COLD_ENTRY);
  });

  it("names the agent snapshot whose claimed cold index the backup leaves out", async () => {
    const file = edited((entries, manifest) => {
      manifest.databases = manifest.databases.filter((db) => db.snapshotPath !== COLD_ENTRY);
      return entries.filter((entry) => entry.path !== COLD_ENTRY);
    });
    const report = await verifyBackup(file);
    expect(report.problems.map((p) => p.message)).toEqual([
      `entry "${AGENT_ENTRY}": it claims search rows of 2 cold sessions in its cold index (${COLD_INDEX}), which is not in the backup`,
    ]);
  });

  it("names a cold index carried without its agent's database", async () => {
    const file = edited((entries, manifest) => {
      manifest.databases = manifest.databases.filter((db) => db.snapshotPath !== AGENT_ENTRY);
      return entries.filter((entry) => entry.path !== AGENT_ENTRY);
    });
    const report = await verifyBackup(file);
    expect(report.problems.map((p) => p.message)).toContain(
      `entry "${COLD_ENTRY}": it is agent "main"'s cold index, but that agent's database is not in the archive`,
    );
  });
});

function sha256Of(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

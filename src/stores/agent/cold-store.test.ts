import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openRawSqlite } from "../../db/test-support/raw-sqlite.js";
import { type AgentState, openStateHome, type StateHome } from "../../home.js";
import { corpusTranscripts, sessionIdOfFile } from "../../test-support/corpus.js";
import { modeOf, useTempDirs } from "../../test-support/temp-dir.js";
import { buildContext } from "../../transcript/context.js";
import { parseJsonl } from "../../transcript/jsonl-codec.js";

const tempDir = useTempDirs();

function openAgent(): { home: StateHome; agent: AgentState; dir: string } {
  const dir = tempDir();
  const home = openStateHome({ home: dir });
  return { home, agent: home.agent("main"), dir };
}

/** The hot rows of a session, every column but the row id (which a restore draws anew). */
function hotRows(agent: AgentState, sessionId: string): unknown[] {
  return agent.db
    .prepare(
      `SELECT seq, event_id, event_type, parent_id, idempotency_key, created_at, event_json
       FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?) ORDER BY seq`,
    )
    .all(sessionId);
}

function blobRefs(agent: AgentState, sessionId: string): unknown[] {
  return agent.db
    .prepare(
      `SELECT r.seq, r.sha256, b.mime_type, b.size_bytes, b.created_at, hex(b.data) AS data
       FROM transcript_blob_refs r JOIN transcript_blobs b USING (sha256)
       WHERE r.session_no = (SELECT session_no FROM sessions WHERE session_id = ?)
       ORDER BY r.seq, r.sha256`,
    )
    .all(sessionId);
}

function exportOf(agent: AgentState, sessionId: string): string {
  return [...agent.transcripts.exportJsonl(sessionId)].join("");
}

function hitIds(agent: AgentState, query: string, sessionId?: string): string[] {
  return agent.search
    .search(query, { limit: 500, ...(sessionId === undefined ? {} : { sessionId }) })
    .map((hit) => `${hit.sessionId}/${hit.eventId}`)
    .sort();
}

/** The rowids of the agent's cold index file, read by plain SQL (none without the file). */
function coldIndexRowids(agent: AgentState): number[] {
  const path = join(agent.db.path, "..", "cold", "index.sqlite");
  if (!existsSync(path)) return [];
  const raw = openRawSqlite(path, { readonly: true });
  try {
    return raw.prepare("SELECT rowid FROM cold_fts ORDER BY rowid").pluck().all() as number[];
  } finally {
    raw.close();
  }
}

/**
 * How many index rows each event has, counted on the tables: a hot row by its row id in
 * transcript_fts, or a row of the cold index file under session_no * 2^32 + seq that the agent
 * database's claim covers.
 */
function indexRowsPerEvent(agent: AgentState): { events: number; once: number; none: number } {
  const cold = new Set(coldIndexRowids(agent));
  const per = agent.db
    .prepare<{ n: number; cold_rowid: number; claimed: number }>(
      `SELECT (SELECT count(*) FROM transcript_fts WHERE rowid = e.id) AS n,
         e.session_no * 4294967296 + e.seq AS cold_rowid,
         coalesce((SELECT e.seq <= through_seq FROM cold_index_claims
           WHERE session_no = e.session_no), 0) AS claimed
       FROM transcript_events e`,
    )
    .all()
    .map((row) => row.n + (row.claimed === 1 && cold.has(row.cold_rowid) ? 1 : 0));
  expect(per.every((n) => n <= 1)).toBe(true);
  return {
    events: per.length,
    once: per.filter((n) => n === 1).length,
    none: per.filter((n) => n === 0).length,
  };
}

const user = (text: string) => ({
  type: "message",
  message: { role: "user", content: [{ type: "text", text }], timestamp: 1 },
});

/** A session with two branches, an image big enough to become a blob, and CJK text. */
function generatedSession(agent: AgentState, sessionId: string, image: string): void {
  const t = agent.transcripts;
  const first = t.append(sessionId, user("hello cold storage"), { sessionKey: "agent:main:x" });
  t.append(sessionId, user("東京の天気は晴れです"));
  t.append(sessionId, {
    type: "message",
    message: {
      role: "user",
      content: [
        { type: "text", text: "look at this picture" },
        { type: "image", mimeType: "image/png", data: image },
      ],
    },
  });
  agent.branches.branch(sessionId, first.event.id);
  t.append(sessionId, user("another branch about zebras"), { idempotencyKey: "k-1" });
  for (let i = 0; i < 40; i++) t.append(sessionId, user(`filler message number ${i} 中文测试`));
}

function imageOf(seed: string): string {
  return Buffer.concat(
    Array.from({ length: 700 }, (_, i) => createHash("sha256").update(`${seed}${i}`).digest()),
  ).toString("base64");
}

describe("ColdStore.move and transparent reads", () => {
  it("moves a session to an archive and reads, exports and searches it as before", () => {
    const { home, agent, dir } = openAgent();
    generatedSession(agent, "s1", imageOf("a"));
    generatedSession(agent, "s2", imageOf("b"));
    const before = {
      rows: hotRows(agent, "s1"),
      refs: blobRefs(agent, "s1"),
      jsonl: exportOf(agent, "s1"),
      read: agent.transcripts.read("s1"),
      tail: agent.transcripts.tail("s1", 5),
      session: agent.branches.session("s1"),
      context: agent.branches.context("s1"),
      tree: agent.branches.tree("s1").pathTo(agent.branches.leaf("s1") as string),
      hits: ["天気", "zebras", "picture", "filler", "中文"].map((q) => hitIds(agent, q)),
      inSession: hitIds(agent, "filler", "s1"),
    };
    const moved = agent.cold.move("s1");
    expect(moved.alreadyCold).toBe(false);
    expect(moved.events).toBe(before.rows.length);
    expect(hotRows(agent, "s1")).toEqual([]);
    expect(blobRefs(agent, "s1")).toEqual([]);
    // The image blob was the session's own: it left the hot table with it.
    expect(agent.db.prepare("SELECT count(*) AS n FROM transcript_blobs").get()).toEqual({ n: 1 });

    const file = join(dir, moved.archivePath);
    expect(modeOf(statSync(file))).toBe(0o600);
    expect(modeOf(statSync(join(dir, "agents", "main", "agent", "cold")))).toBe(0o700);
    expect(createHash("sha256").update(readFileSync(file)).digest("hex")).toBe(moved.sha256);

    expect(exportOf(agent, "s1")).toBe(before.jsonl);
    expect(agent.transcripts.read("s1")).toEqual(before.read);
    expect(agent.transcripts.read("s1", { afterSeq: 10, limit: 3 })).toEqual(
      before.read.slice(10, 13),
    );
    expect(agent.transcripts.tail("s1", 5)).toEqual(before.tail);
    expect(agent.branches.session("s1")).toEqual(before.session);
    expect(agent.branches.context("s1")).toEqual(before.context);
    expect(agent.branches.tree("s1").pathTo(agent.branches.leaf("s1") as string)).toEqual(
      before.tree,
    );
    const image = before.read[3];
    expect(agent.transcripts.get("s1", image?.event.id as string)).toEqual(image);
    expect(agent.transcripts.readKeyed("s1", "k-")).toHaveLength(1);
    expect(["天気", "zebras", "picture", "filler", "中文"].map((q) => hitIds(agent, q))).toEqual(
      before.hits,
    );
    expect(hitIds(agent, "filler", "s1")).toEqual(before.inSession);
    expect(agent.db.integrityCheck()).toEqual(["ok"]);

    // Moving again changes nothing.
    expect(agent.cold.move("s1")).toMatchObject({ alreadyCold: true, sha256: moved.sha256 });
    home.close();
  });

  it("restores a session exactly on append, and deletes its archive after the commit", () => {
    const { home, agent, dir } = openAgent();
    generatedSession(agent, "s1", imageOf("a"));
    const rows = hotRows(agent, "s1");
    const refs = blobRefs(agent, "s1");
    const jsonl = exportOf(agent, "s1");
    const leaf = agent.branches.leaf("s1");
    const moved = agent.cold.move("s1");

    const added = agent.transcripts.append("s1", user("back from the cold"));
    expect(added.seq).toBe(rows.length + 1);
    expect(added.event.parentId).toBe(leaf);
    expect(hotRows(agent, "s1").slice(0, -1)).toEqual(rows);
    expect(blobRefs(agent, "s1")).toEqual(refs);
    expect(agent.cold.isCold("s1")).toBe(false);
    expect(existsSync(join(dir, moved.archivePath))).toBe(false);
    // The restored events keep their rows in the cold index, under (session, seq); the header
    // has no text, and the new event waits above the watermark (a search still finds it).
    expect(indexRowsPerEvent(agent)).toEqual({
      events: rows.length + 1,
      once: rows.length - 1,
      none: 2,
    });
    expect(exportOf(agent, "s1")).toBe(`${jsonl}${JSON.stringify(added.event)}\n`);
    const hello = (rows[1] as { event_id: string }).event_id;
    expect(hitIds(agent, "cold")).toEqual([`s1/${hello}`, `s1/${added.event.id}`].sort());
    agent.transcripts.index.indexPending();
    expect(indexRowsPerEvent(agent)).toMatchObject({ once: rows.length, none: 1 });
    expect(hitIds(agent, "cold")).toEqual([`s1/${hello}`, `s1/${added.event.id}`].sort());
    expect(agent.db.integrityCheck()).toEqual(["ok"]);
    home.close();
  });

  it("restores on branch and keeps every event's index row exactly once", () => {
    const { home, agent } = openAgent();
    generatedSession(agent, "s1", imageOf("a"));
    const zebra = hitIds(agent, "zebras");
    agent.cold.move("s1");
    // The moved events held the top row ids: new events reuse them, and must still be found.
    generatedSession(agent, "s2", imageOf("c"));
    expect(hitIds(agent, "zebras")).toHaveLength(2);
    const first = agent.transcripts.read("s1")[1]?.event.id as string;
    agent.branches.branch("s1", first);
    expect(agent.cold.isCold("s1")).toBe(false);
    expect(hitIds(agent, "zebras", "s1")).toEqual(zebra);
    expect(hitIds(agent, "zebras")).toHaveLength(2);
    // Every event but the two headers (no text) has one index row, hot or cold.
    const all = agent.db
      .prepare<{ n: number }>("SELECT count(*) AS n FROM transcript_events")
      .get();
    expect(indexRowsPerEvent(agent)).toEqual({ events: all?.n, once: (all?.n ?? 0) - 2, none: 2 });
    agent.cold.move("s1");
    agent.cold.move("s2");
    expect(hitIds(agent, "zebras")).toHaveLength(2);
    agent.transcripts.append("s1", user("zebras once more"));
    expect(hitIds(agent, "zebras", "s1")).toHaveLength(2);
    agent.cold.move("s1");
    expect(hitIds(agent, "zebras")).toHaveLength(3);
    expect(agent.transcripts.index.backlog()).toBe(0);
    home.close();
  });

  it("removes a leftover archive without its row on the next move, and sweeps others", () => {
    const { home, agent, dir } = openAgent();
    generatedSession(agent, "s1", imageOf("a"));
    generatedSession(agent, "s2", imageOf("b"));
    const cold = join(dir, "agents", "main", "agent", "cold");
    const first = agent.cold.move("s1");
    agent.transcripts.append("s1", user("warm again"));
    // What a move killed before its commit leaves: a renamed archive and a temp file.
    const sessionNo = first.archivePath.match(/s(\d+)\./)?.[1];
    writeFileSync(join(cold, `s${sessionNo}.0123456789ab.cold`), "partial");
    writeFileSync(join(cold, `s${sessionNo}.ba9876543210.cold.tmp`), "partial");
    writeFileSync(join(cold, "s99.ba9876543210.cold"), "orphan");
    writeFileSync(join(cold, "notes.txt"), "not ours");
    const second = agent.cold.move("s1");
    // The cold index file is the agent's, never a leftover.
    const ours = ["index.sqlite", "notes.txt"];
    expect(readdirSync(cold).sort()).toEqual(
      [...ours, "s99.ba9876543210.cold", second.archivePath.split("/").at(-1)].sort(),
    );
    expect(agent.cold.sweep()).toBe(1);
    expect(readdirSync(cold).sort()).toEqual(
      [...ours, second.archivePath.split("/").at(-1)].sort(),
    );
    expect(exportOf(agent, "s1")).toContain("warm again");
    home.close();
  });

  it("deletes a cold session with its archive and its index rows, and nothing else", () => {
    const { home, agent, dir } = openAgent();
    generatedSession(agent, "s1", imageOf("a"));
    generatedSession(agent, "s2", imageOf("b"));
    const one = agent.cold.move("s1");
    const two = agent.cold.move("s2");
    expect(agent.lifecycle.delete("s1")).toBe(true);
    expect(existsSync(join(dir, one.archivePath))).toBe(false);
    expect(existsSync(join(dir, two.archivePath))).toBe(true);
    expect(hitIds(agent, "zebras")).toEqual([
      `s2/${agent.transcripts.read("s2").find((e) => JSON.stringify(e.event).includes("zebras"))?.event.id}`,
    ]);
    const counts = agent.db
      .prepare<{ cold: number; claims: number; rows: number; session: number }>(
        `SELECT (SELECT count(*) FROM cold_sessions) AS cold,
           (SELECT count(*) FROM cold_index_claims) AS claims,
           (SELECT rows FROM cold_index_claims) AS rows,
           (SELECT session_no FROM sessions WHERE session_id = 's2') AS session`,
      )
      .get();
    expect(counts).toMatchObject({ cold: 1, claims: 1, rows: 44 });
    // The deleted session's rows stay in the file, unclaimed (never found), until gc drops them.
    const ofS2 = (rowid: number) => Math.floor(rowid / 2 ** 32) === counts?.session;
    expect(coldIndexRowids(agent).filter(ofS2)).toHaveLength(44);
    expect(coldIndexRowids(agent).length).toBeGreaterThan(44);
    expect(agent.cold.purgeIndex()).toBeGreaterThanOrEqual(coldIndexRowids(agent).length - 44);
    expect(coldIndexRowids(agent)).toHaveLength(44);
    expect(coldIndexRowids(agent).every(ofS2)).toBe(true);
    expect(hitIds(agent, "zebras")).toHaveLength(1);
    home.close();
  });

  it("leaves a moved session's hot index rows for gc, never above the largest id left", () => {
    const { home, agent } = openAgent();
    for (const id of ["s1", "s2", "s3"]) generatedSession(agent, id, imageOf(id));
    const zebras = hitIds(agent, "zebras");
    const count = (sql: string) => (agent.db.prepare<{ n: number }>(sql).get()?.n ?? -1) as number;
    const stale = () => count("SELECT count(*) AS n FROM transcript_fts_stale");
    const orphans = () =>
      count(
        "SELECT count(*) AS n FROM transcript_fts WHERE rowid NOT IN (SELECT id FROM transcript_events)",
      );
    agent.cold.move("s1");
    // s1's 44 indexed events keep their rows in transcript_fts and match no event; the ids of its
    // 45 events (the header has no index row) are marked stale.
    expect({ stale: stale(), orphans: orphans() }).toEqual({ stale: 45, orphans: 44 });
    expect(hitIds(agent, "zebras")).toEqual(zebras);
    // s3 held the top ids: nothing of it may stay, since the next events take those ids again.
    agent.cold.move("s3");
    expect({ stale: stale(), orphans: orphans() }).toEqual({ stale: 45, orphans: 44 });
    // With s2 deleted no event is left: s1's ids would come back, so their rows go at once.
    expect(agent.lifecycle.delete("s2")).toBe(true);
    expect({ stale: stale(), orphans: orphans() }).toEqual({ stale: 0, orphans: 0 });
    for (let i = 0; i < 50; i++) agent.transcripts.append("s4", user(`giraffes ${i}`));
    agent.transcripts.index.indexPending();
    const texts = agent.db
      .prepare<{ text: string }>(
        "SELECT f.text FROM transcript_events e JOIN transcript_fts f ON f.rowid = e.id",
      )
      .all();
    expect(texts.map((t) => t.text)).toEqual(Array.from({ length: 50 }, (_, i) => `giraffes ${i}`));
    expect(hitIds(agent, "zebras").map((id) => id.split("/")[0])).toEqual(["s1", "s3"]);
    expect(hitIds(agent, "giraffes")).toHaveLength(50);
    expect(agent.db.integrityCheck()).toEqual(["ok"]);
    home.close();
  });

  it("ranks around stale index rows: they never take a hot hit's place in the limit", () => {
    const { home, agent } = openAgent();
    const t = agent.transcripts;
    // Moved: 30 short rows, each saying apple four times (the best-ranked rows of transcript_fts).
    for (let i = 0; i < 30; i++) t.append("moved", user("apple apple apple apple"));
    for (let i = 0; i < 200; i++) t.append("hot", user(`banana note ${i}`));
    const hot = [0, 1, 2].map((i) =>
      t.append("hot", user(`apple pie recipe number ${i} for later`)),
    );
    agent.cold.move("moved");
    const hits = agent.search.search("apple", { limit: 10 });
    expect(hits).toHaveLength(10);
    expect(
      hits
        .filter((h) => h.sessionId === "hot")
        .map((h) => h.eventId)
        .sort(),
    ).toEqual(hot.map((r) => r.event.id).sort());
    home.close();
  });

  it("gc drops the index rows moves left behind, in batches, and every hit stays", () => {
    const { home, agent } = openAgent();
    generatedSession(agent, "s1", imageOf("s1"));
    agent.transcripts.appendMany(
      "s1",
      Array.from({ length: 2500 }, (_, i) => user(`giraffes ${i}`)),
    );
    for (const id of ["s2", "s3"]) generatedSession(agent, id, imageOf(id));
    agent.cold.move("s1");
    agent.cold.move("s2");
    const before = ["zebras", "filler", "picture"].map((q) => hitIds(agent, q));
    expect(before.map((hits) => hits.length)).toEqual([3, 120, 3]);
    // Two batches: the ids of every event of s1 and s2 (headers included).
    expect(agent.cold.purgeIndex()).toBe(2545 + 45);
    expect(agent.cold.purgeIndex()).toBe(0);
    const rows = agent.db
      .prepare<{ fts: number; events: number; stale: number }>(
        `SELECT (SELECT count(*) FROM transcript_fts) AS fts,
           (SELECT count(*) FROM transcript_events WHERE event_type <> 'session') AS events,
           (SELECT count(*) FROM transcript_fts_stale) AS stale`,
      )
      .get();
    expect(rows).toEqual({ fts: 44, events: 44, stale: 0 });
    expect(["zebras", "filler", "picture"].map((q) => hitIds(agent, q))).toEqual(before);
    expect(hitIds(agent, "giraffes")).toHaveLength(500);
    agent.db.exec("INSERT INTO transcript_fts (transcript_fts) VALUES ('integrity-check')");
    home.close();
  });

  it("says E_CORRUPT when an archive is missing or damaged, and changes nothing on append", () => {
    const { home, agent, dir } = openAgent();
    generatedSession(agent, "s1", imageOf("a"));
    const moved = agent.cold.move("s1");
    const file = join(dir, moved.archivePath);
    const bytes = readFileSync(file);
    const corrupt = expect.objectContaining({ code: "E_CORRUPT" });
    const damaged = Buffer.from(bytes);
    damaged[30] = (damaged[30] as number) ^ 0xff;
    writeFileSync(file, damaged);
    expect(() => agent.transcripts.read("s1")).toThrow(corrupt);
    expect(() => agent.transcripts.append("s1", user("lost?"))).toThrow(corrupt);
    rmSync(file);
    expect(() => agent.transcripts.tail("s1")).toThrow(corrupt);
    expect(() => agent.transcripts.append("s1", user("lost?"))).toThrow(corrupt);
    expect(agent.cold.isCold("s1")).toBe(true);
    expect(hotRows(agent, "s1")).toEqual([]);
    // Put back, the archive serves again and the append restores it.
    writeFileSync(file, bytes);
    expect(agent.transcripts.append("s1", user("found")).seq).toBe(moved.events + 1);
    home.close();
  });

  it("refuses a session without events and a move inside a transaction", () => {
    const { home, agent } = openAgent();
    agent.transcripts.append("s1", user("x"));
    expect(() => agent.cold.move("nope")).toThrow(expect.objectContaining({ code: "E_NOT_FOUND" }));
    expect(() => agent.db.tx(() => agent.cold.move("s1"))).toThrow(TypeError);
    home.close();
  });
});

const corpus = corpusTranscripts();

describe.skipIf(corpus.length === 0 && process.env.CI !== "true")(
  "cold storage of the real corpus",
  () => {
    it("round-trips every corpus session: export and search identical cold and restored", () => {
      const { home, agent } = openAgent();
      const ids = new Set<string>();
      for (const file of corpus) {
        const sessionId = sessionIdOfFile(file.name);
        if (ids.has(sessionId)) continue;
        const events = parseJsonl(file.text).flatMap((r) => (r.ok ? [r.event] : []));
        if (events.length === 0) continue;
        ids.add(sessionId);
        agent.transcripts.appendMany(sessionId, events, { verbatim: true });
      }
      const queries = ["error", "file", "the", "session", "user", "config", "你好", "http"];
      const snapshot = () => ({
        exports: [...ids].map((id) => exportOf(agent, id)),
        contexts: [...ids].map((id) => agent.branches.context(id)),
        hits: queries.map((q) => hitIds(agent, q)),
      });
      const before = snapshot();
      expect(before.hits.flat().length).toBeGreaterThan(100);
      for (const id of ids) agent.cold.move(id);
      expect(agent.db.prepare("SELECT count(*) AS n FROM transcript_events").get()).toEqual({
        n: 0,
      });
      expect(snapshot()).toEqual(before);
      for (const id of ids) {
        expect(buildContext([...agent.transcripts.events(id)].map((e) => e.event))).toEqual(
          buildContext(
            parseJsonl(before.exports[[...ids].indexOf(id)] ?? "").flatMap((r) =>
              r.ok ? [r.event] : [],
            ),
          ),
        );
      }
      for (const id of ids) expect(agent.cold.restore(id)).toBe(true);
      expect(snapshot()).toEqual(before);
      expect(agent.db.prepare("SELECT count(*) AS n FROM cold_sessions").get()).toEqual({ n: 0 });
      expect(agent.db.integrityCheck()).toEqual(["ok"]);
      home.close();
    }, 120_000);
  },
);

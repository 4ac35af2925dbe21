import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp, type ServerApp } from "./app.js";
import {
  GROUP_KEY,
  MAIN_KEY,
  ODD_KEY,
  SECRET_REFERENCE,
  SENSITIVE_VALUE,
  type SeededHome,
  seedHome,
} from "./test-support/seed-home.js";

const tempDir = useTempDirs();
const ORIGIN = "http://127.0.0.1:4711";

let seeded: SeededHome;
let home: StateHome;
let server: ServerApp;

beforeEach(() => {
  seeded = seedHome(tempDir());
  home = openStateHome({ home: seeded.home, create: false });
  server = createApp({ home });
});

afterEach(() => {
  server.close();
  home.close();
});

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are asserted field by field
async function get(path: string): Promise<{ status: number; body: any }> {
  const response = await server.app.request(`${ORIGIN}${path}`);
  return { status: response.status, body: await response.json() };
}

describe("GET /api/agents", () => {
  it("lists every registered agent with its database size on disk", async () => {
    const { status, body } = await get("/api/agents");
    expect(status).toBe(200);
    expect(body.agents.map((a: { agentId: string }) => a.agentId)).toEqual(["main", "research"]);
    for (const agent of body.agents) {
      expect(agent.sizeBytes).toBeGreaterThan(0);
      expect(agent.present).toBe(true);
    }
  });
});

describe("GET /api/agents/:agentId/sessions", () => {
  it("pages session entries, most recently updated first, with a summary of each", async () => {
    const first = await get("/api/agents/main/sessions?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.entries).toHaveLength(2);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const rest = await get(`/api/agents/main/sessions?limit=2&cursor=${first.body.nextCursor}`);
    expect(rest.body.nextCursor).toBeNull();
    const all = [...first.body.entries, ...rest.body.entries];
    expect(all.map((e: { sessionKey: string }) => e.sessionKey).sort()).toEqual(
      [MAIN_KEY, GROUP_KEY, ODD_KEY].sort(),
    );
    const main = all.find((e: { sessionKey: string }) => e.sessionKey === MAIN_KEY);
    expect(main).toMatchObject({
      sessionId: seeded.activeId,
      label: "Dana",
      channel: "telegram",
      model: "anthropic/claude-sonnet-4-5",
      session: { sessionId: seeded.activeId, eventCount: 1 },
    });
    expect(main.entry).toBeUndefined();
  });

  it("filters by key prefix and by update time", async () => {
    const group = await get(
      `/api/agents/main/sessions?prefix=${encodeURIComponent("agent:main:telegram")}`,
    );
    expect(group.body.entries.map((e: { sessionKey: string }) => e.sessionKey)).toEqual([
      GROUP_KEY,
    ]);
    const future = await get(`/api/agents/main/sessions?updatedSince=${Date.now() + 60_000}`);
    expect(future.body.entries).toEqual([]);
    const iso = await get("/api/agents/main/sessions?updatedSince=2000-01-01T00:00:00Z");
    expect(iso.body.entries).toHaveLength(3);
  });

  it("filters by the conversation an entry points to", async () => {
    home.sessions.patch("main", GROUP_KEY, {}, { conversationId: "conv-group" });
    const group = await get("/api/agents/main/sessions?conversationId=conv-group");
    expect(group.status).toBe(200);
    expect(group.body.entries.map((e: { sessionKey: string }) => e.sessionKey)).toEqual([
      GROUP_KEY,
    ]);
    const none = await get("/api/agents/main/sessions?conversationId=conv-other");
    expect(none.body.entries).toEqual([]);
  });

  it("shows one key's entry and every session it has had, even with / ? & % # in the key", async () => {
    const main = await get(`/api/agents/main/sessions/${encodeURIComponent(MAIN_KEY)}`);
    expect(main.status).toBe(200);
    expect(main.body.entry.entry).toMatchObject({ sessionId: seeded.activeId, label: "Dana" });
    expect(main.body.history.map((s: { sessionId: string }) => s.sessionId)).toEqual([
      seeded.sessionId,
      seeded.activeId,
    ]);
    const odd = await get(`/api/agents/main/sessions/${encodeURIComponent(ODD_KEY)}`);
    expect(odd.status).toBe(200);
    expect(odd.body.entry.sessionKey).toBe(ODD_KEY);
  });

  it("answers 404 with the error code for an unknown agent or key", async () => {
    const agent = await get("/api/agents/nobody/sessions");
    expect(agent.status).toBe(404);
    expect(agent.body.error.code).toBe("E_NOT_FOUND");
    const key = await get("/api/agents/main/sessions/agent%3Amain%3Anone");
    expect(key.status).toBe(404);
    expect(key.body.error.code).toBe("E_NOT_FOUND");
  });
});

describe("transcripts", () => {
  it("reads a page of events after a seq, and says where the next page starts", async () => {
    const base = `/api/agents/main/transcripts/${seeded.sessionId}`;
    const page = await get(`${base}/events?limit=3`);
    expect(page.status).toBe(200);
    expect(page.body.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3]);
    expect(page.body.events[0].event.type).toBe("session");
    expect(page.body.nextAfterSeq).toBe(3);
    expect(page.body.session).toMatchObject({ sessionId: seeded.sessionId, eventCount: 7 });
    const last = await get(`${base}/events?afterSeq=3&limit=10`);
    expect(last.body.events.map((e: { seq: number }) => e.seq)).toEqual([4, 5, 6, 7]);
    expect(last.body.nextAfterSeq).toBeNull();
  });

  it("summarises a cold session's tree from its archive, as it did while hot", async () => {
    const path = `/api/agents/main/transcripts/${seeded.sessionId}/tree`;
    const hot = (await get(path)).body;
    expect(hot.nodes).toBe(6);
    const agent = home.agent("main");
    agent.cold.move(seeded.sessionId);
    try {
      const cold = await get(path);
      expect(cold.status).toBe(200);
      expect(cold.body).toEqual(hot);
    } finally {
      agent.cold.restore(seeded.sessionId);
    }
  });

  it("summarises the tree: current leaf, branch point, abandoned range, compaction", async () => {
    const { status, body } = await get(`/api/agents/main/transcripts/${seeded.sessionId}/tree`);
    expect(status).toBe(200);
    expect(body.leafEventId).toBe(seeded.ids.branchReply);
    expect(body.nodes).toBe(6);
    expect(body.branchPoints).toEqual([
      {
        id: seeded.ids.ask,
        seq: 2,
        type: "message",
        children: [
          { id: seeded.ids.toolCall, seq: 3, type: "message", current: false },
          { id: seeded.ids.branchReply, seq: 7, type: "message", current: true },
        ],
      },
    ]);
    expect(body.offBranch).toEqual([[3, 6]]);
    expect(body.currentBranchLength).toBe(2);
    expect(body.summaries).toEqual([
      {
        id: seeded.ids.compaction,
        seq: 6,
        type: "compaction",
        summary: "## Goal\nKeep the garden watered.",
        tokensBefore: 9120,
      },
    ]);
    expect(body.leaves.map((l: { id: string; current: boolean }) => [l.id, l.current])).toEqual([
      [seeded.ids.compaction, false],
      [seeded.ids.branchReply, true],
    ]);
  });

  it("shows a session with its snapshots and lists sessions that have a log", async () => {
    const session = await get(`/api/agents/main/transcripts/${seeded.sessionId}`);
    expect(session.body.session).toMatchObject({ sessionKey: MAIN_KEY, resetReason: null });
    expect(session.body.snapshots).toEqual(expect.any(Array));
    const list = await get("/api/agents/main/transcripts?limit=10");
    expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toContain(
      seeded.groupId,
    );
    const missing = await get("/api/agents/main/transcripts/no-such-session/events");
    expect(missing.status).toBe(404);
  });
});

describe("GET /api/search", () => {
  it("finds ranked hits with snippets and highlight offsets across agents", async () => {
    const { status, body } = await get("/api/search?q=basil");
    expect(status).toBe(200);
    const agents = new Set(body.hits.map((h: { agentId: string }) => h.agentId));
    expect(agents).toEqual(new Set(["main", "research"]));
    for (const hit of body.hits) {
      const [from, to] = hit.highlights[0];
      expect(hit.snippet.slice(from, to).toLowerCase()).toBe("basil");
    }
    const one = await get(`/api/search?q=basil&agentId=research`);
    expect(one.body.hits).toHaveLength(1);
    expect(one.body.hits[0].sessionId).toBe(seeded.researchId);
  });
});

describe("memory", () => {
  it("lists topics with the session's active one marked", async () => {
    const { body } = await get("/api/agents/main/memory/topics");
    expect(body.topics).toHaveLength(1);
    expect(body.topics[0]).toMatchObject({
      topicId: seeded.topicId,
      title: "Garden watering",
      active: true,
    });
    const bySession = await get(`/api/agents/main/memory/topics?sessionId=${seeded.activeId}`);
    expect(bySession.body.topics).toEqual([]);
  });

  it("never shows a secret_ref value, and a sensitive value only when asked", async () => {
    const { body, status } = await get("/api/agents/main/memory/facts");
    expect(status).toBe(200);
    const byKey = Object.fromEntries(body.facts.map((f: { key: string }) => [f.key, f]));
    expect(byKey.name).toMatchObject({ value: "Dana", redacted: false });
    expect(byKey.address).toMatchObject({ value: null, redacted: true });
    expect(byKey.openai).toMatchObject({
      value: null,
      redacted: true,
      reference: SECRET_REFERENCE,
    });
    const shown = await get("/api/agents/main/memory/facts?includeSensitive=true");
    const address = shown.body.facts.find((f: { key: string }) => f.key === "address");
    expect(address.value).toBe(SENSITIVE_VALUE);
    const secret = shown.body.facts.find((f: { key: string }) => f.key === "openai");
    expect(secret.value).toBeNull();
    const raw = JSON.stringify(shown.body);
    expect(raw).not.toContain(`"value":"${SECRET_REFERENCE}"`);
  });
});

describe("history and status", () => {
  it("lists migration runs with their sources, and backup runs", async () => {
    const runs = await get("/api/migrations");
    expect(runs.body.runs.map((r: { id: string }) => r.id)).toEqual([seeded.migrationRunId]);
    const run = await get(`/api/migrations/${seeded.migrationRunId}`);
    expect(run.body.run.status).toBe("succeeded");
    expect(run.body.sources).toHaveLength(1);
    expect(run.body.sources[0]).toMatchObject({ kind: "session-index", recordCount: 2 });
    const backups = await get("/api/backups");
    expect(backups.body.runs).toEqual([
      expect.objectContaining({
        id: seeded.backupRunId,
        status: "succeeded",
        databases: 3,
        archiveExists: false,
      }),
    ]);
    expect((await get("/api/migrations/nope")).status).toBe(404);
  });

  it("describes every database of the home; the health check only when asked", async () => {
    const { body } = await get("/api/status");
    expect(body.home).toBe(seeded.home);
    expect(body.databases.map((d: { agentId: string | null }) => d.agentId)).toEqual([
      null,
      "main",
      "research",
    ]);
    expect(body.databases[1].tables.transcript_events).toBe(11);
    expect(body.databases.every((d: { quickCheck: string }) => d.quickCheck === "not run")).toBe(
      true,
    );
    expect(body.server).toEqual({ write: false });
    const checked = await get("/api/status?check=true");
    const results = checked.body.databases.map((d: { quickCheck: string }) => d.quickCheck);
    expect(results).toEqual(["ok", "ok", "ok"]);
  });
});

describe("the dashboard", () => {
  it("serves the app and its assets, with a content security policy", async () => {
    const page = await server.app.request(`${ORIGIN}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await page.text()).toContain('<script type="module" src="/app.js">');
    const script = await server.app.request(`${ORIGIN}/app.js`);
    expect(script.headers.get("content-type")).toMatch(/javascript/);
    const missing = await server.app.request(`${ORIGIN}/nope.js`);
    expect(missing.status).toBe(404);
  });
});

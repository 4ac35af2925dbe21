import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp, type ServerApp } from "./app.js";
import { GROUP_KEY, MAIN_KEY, ODD_KEY, seedHome } from "./test-support/seed-home.js";
import { type SeededInbound, seedInbound } from "./test-support/seed-inbound.js";

const tempDir = useTempDirs();
const ORIGIN = "http://127.0.0.1:4711";
const MAIN = `/api/agents/main/sessions/${encodeURIComponent(MAIN_KEY)}`;

let seeded: SeededInbound;
let home: StateHome;
let server: ServerApp;

beforeEach(() => {
  const dir = tempDir();
  seeded = seedInbound(seedHome(dir));
  home = openStateHome({ home: dir, create: false, readonly: true });
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

function storedStates(): unknown[] {
  const agent = home.listAgents().find((a) => a.agentId === "main");
  const db = openRawSqlite(agent?.dbPath ?? "", { readonly: true });
  try {
    return db.prepare("SELECT input_id, state FROM inputs ORDER BY arrival_seq").all();
  } finally {
    db.close();
  }
}

describe("GET /api/agents/:agentId/sessions/:key/inputs", () => {
  it("lists the key's inputs in arrival order; a dead gateway's lapsed claim reads interrupted", async () => {
    const before = storedStates();
    const { status, body } = await get(`${MAIN}/inputs`);
    expect(status).toBe(200);
    const { answered, lost, cut, waiting } = seeded.inputs;
    expect(
      body.inputs.map((i: Record<string, unknown>) => [i.inputId, i.state, i.storedState]),
    ).toEqual([
      [answered, "completed", "completed"],
      [lost, "interrupted", "interrupted"],
      [cut, "interrupted", "claimed"],
      [waiting, "accepted", "accepted"],
    ]);
    expect(body.inputs[0].outcome.eventIds).toEqual(seeded.answeredEventIds);
    expect(body.inputs[0].attempts).toBe(1);
    const interrupted = await get(`${MAIN}/inputs?state=interrupted&limit=1`);
    expect(interrupted.body.inputs.map((i: { inputId: string }) => i.inputId)).toEqual([lost]);
    expect(storedStates()).toEqual(before);
  });

  it("is empty for another key, and refuses a bad state, limit or agent", async () => {
    const other = await get(`/api/agents/main/sessions/${encodeURIComponent(ODD_KEY)}/inputs`);
    expect(other).toEqual({ status: 200, body: { inputs: [] } });
    const bad = await get(`${MAIN}/inputs?state=lost`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/state/);
    expect((await get(`${MAIN}/inputs?limit=0`)).status).toBe(400);
    expect((await get(`${MAIN}/inputs?bogus=1`)).status).toBe(400);
    expect((await get(`/api/agents/nobody/sessions/x/inputs`)).status).toBe(404);
    expect((await get(`/api/agents/..%2Fx/sessions/x/inputs`)).status).toBe(400);
  });
});

describe("GET /api/agents/:agentId/sessions/:key/deliveries", () => {
  it("lists the key's receipts with their send times; a send cut off by a crash reads unknown", async () => {
    const { status, body } = await get(`${MAIN}/deliveries`);
    expect(status).toBe(200);
    const { sent, cut, queued } = seeded.deliveries;
    const byId = new Map(body.deliveries.map((d: { id: string }) => [d.id, d]));
    expect([...byId.keys()].sort()).toEqual([cut, queued, sent].sort());
    expect(byId.get(sent)).toMatchObject({
      status: "sent",
      platformMessageId: seeded.platformMessageId,
      settledAt: expect.any(Number),
      sendStartedAt: expect.any(Number),
    });
    expect(byId.get(cut)).toMatchObject({ status: "unknown", settledAt: null });
    expect(byId.get(queued)).toMatchObject({ status: "pending", sendStartedAt: null });
    const unknown = await get(`${MAIN}/deliveries?status=unknown`);
    expect(unknown.body.deliveries.map((d: { id: string }) => d.id)).toEqual([cut]);
  });

  it("is empty for another key, and refuses a bad status or agent", async () => {
    const group = await get(
      `/api/agents/main/sessions/${encodeURIComponent(GROUP_KEY)}/deliveries`,
    );
    expect(group).toEqual({ status: 200, body: { deliveries: [] } });
    const bad = await get(`${MAIN}/deliveries?status=delivered`);
    expect(bad.status).toBe(400);
    expect((await get(`${MAIN}/deliveries?queue=`)).status).toBe(400);
    expect((await get(`/api/agents/nobody/sessions/x/deliveries`)).status).toBe(404);
  });
});

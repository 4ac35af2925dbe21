import { afterEach, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp, type ServerApp } from "./app.js";
import { MAIN_KEY, type SeededHome, seedHome } from "./test-support/seed-home.js";

// What a write must refuse rather than store changed: bytes that are not UTF-8 (they would become
// U+FFFD), numbers JSON cannot hold (1e400 would become null), and fields of a session entry that
// the store itself keeps (a client's sessionId would orphan the active session).

const tempDir = useTempDirs();
const LOCAL = "http://127.0.0.1:4711";
const open: Array<{ server: ServerApp; home: StateHome }> = [];
afterEach(() => {
  for (const { server, home } of open.splice(0)) {
    server.close();
    home.close();
  }
});

function serve(): { seeded: SeededHome; home: StateHome; server: ServerApp } {
  const seeded = seedHome(tempDir());
  const home = openStateHome({ home: seeded.home, create: false });
  const server = createApp({ home, write: true });
  open.push({ server, home });
  return { seeded, home, server };
}

function send(server: ServerApp, path: string, method: string, body: string | Uint8Array) {
  return server.app.request(`${LOCAL}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body,
  });
}

async function refusal(
  response: Response,
): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, ...body.error };
}

function eventCount(home: StateHome, sessionId: string): number {
  return home.agent("main", { create: false }).lifecycle.get(sessionId).eventCount;
}

describe("write bodies", () => {
  it("refuses a body that is not UTF-8 with 400 and stores nothing", async () => {
    const { seeded, home, server } = serve();
    const before = eventCount(home, seeded.activeId);
    const head = Buffer.from('{"event":{"type":"message","message":{"role":"user","content":"a');
    const tail = Buffer.from('"}}}');
    const body = Buffer.concat([head, Buffer.from([0xff, 0xfe]), tail]);
    const path = `/api/agents/main/transcripts/${seeded.activeId}/events`;
    const response = await send(server, path, "POST", body);
    expect(await refusal(response)).toMatchObject({ status: 400, code: "E_INVALID_ARGUMENT" });
    expect(eventCount(home, seeded.activeId)).toBe(before);
  });

  it("refuses a number JSON cannot hold (1e400, -1e400) with 400 naming the field", async () => {
    const { seeded, home, server } = serve();
    const before = eventCount(home, seeded.activeId);
    const path = `/api/agents/main/transcripts/${seeded.activeId}/events`;
    for (const number of ["1e400", "-1e400"]) {
      const body = `{"event":{"type":"message","message":{"role":"user","content":"x"},"cost":${number}}}`;
      const found = await refusal(await send(server, path, "POST", body));
      expect(found).toMatchObject({ status: 400, code: "E_INVALID_ARGUMENT" });
      expect(found.message).toMatch(/cost/);
    }
    const patch = `{"fields":{"score":1e400}}`;
    const key = encodeURIComponent(MAIN_KEY);
    const patched = await refusal(
      await send(server, `/api/agents/main/sessions/${key}`, "PATCH", patch),
    );
    expect(patched).toMatchObject({ status: 400, code: "E_INVALID_ARGUMENT" });
    expect(home.sessions.get("main", MAIN_KEY)?.entry).not.toHaveProperty("score");
    expect(eventCount(home, seeded.activeId)).toBe(before);
  });

  it("refuses a patch of the fields the store owns, naming the field, and ensure() keeps one session", async () => {
    const { home, server } = serve();
    const agent = home.agent("main", { create: false });
    const active = agent.lifecycle.ensure(MAIN_KEY).sessionId;
    const before = home.sessions.get("main", MAIN_KEY);
    const key = encodeURIComponent(MAIN_KEY);
    for (const field of [
      "sessionId",
      "compactionCount",
      "turnCount",
      "lastRunId",
      "lastRunStatus",
    ]) {
      const body = JSON.stringify({ fields: { label: "x", [field]: "orphan" } });
      const found = await refusal(
        await send(server, `/api/agents/main/sessions/${key}`, "PATCH", body),
      );
      expect(found).toMatchObject({ status: 400, code: "E_INVALID_ARGUMENT" });
      expect(found.message).toContain(field);
    }
    expect(home.sessions.get("main", MAIN_KEY)).toEqual(before);
    expect(agent.lifecycle.ensure(MAIN_KEY).sessionId).toBe(active);
    const allowed = await send(
      server,
      `/api/agents/main/sessions/${key}`,
      "PATCH",
      JSON.stringify({ fields: { label: "Dana" } }),
    );
    expect(allowed.status).toBe(200);
    expect(home.sessions.get("main", MAIN_KEY)?.entry).toMatchObject({
      label: "Dana",
      sessionId: active,
    });
  });
});

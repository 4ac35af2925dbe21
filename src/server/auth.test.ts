import { afterEach, describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp, type ServerApp } from "./app.js";
import { isLoopbackHost } from "./auth.js";
import { startServer } from "./start-server.js";
import { MAIN_KEY, type SeededHome, seedHome } from "./test-support/seed-home.js";

const tempDir = useTempDirs();
const TOKEN = "s3cret-token-0123456789";
const LOCAL = "http://127.0.0.1:4711";

const open: Array<{ server: ServerApp; home: StateHome }> = [];
afterEach(() => {
  for (const { server, home } of open.splice(0)) {
    server.close();
    home.close();
  }
});

function serve(options: { token?: string; write?: boolean } = {}): {
  seeded: SeededHome;
  home: StateHome;
  request: (path: string, init?: RequestInit) => Promise<Response>;
} {
  const seeded = seedHome(tempDir());
  const home = openStateHome({ home: seeded.home, create: false });
  const server = createApp({ home, ...options });
  open.push({ server, home });
  const request = async (path: string, init?: RequestInit) =>
    server.app.request(path.startsWith("http") ? path : `${LOCAL}${path}`, init);
  return { seeded, home, request };
}

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});

async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { error: { code: string } }).error.code;
}

/** Rows in the agent's transcript, read through a connection of its own. */
function eventCount(homePath: string, sessionId: string): number {
  const home = openStateHome({ home: homePath, create: false });
  try {
    return home.agent("main", { create: false }).lifecycle.get(sessionId).eventCount;
  } finally {
    home.close();
  }
}

describe("binding", () => {
  it("knows loopback names and addresses", () => {
    for (const host of ["127.0.0.1", "127.8.9.10", "localhost", "::1", "[::1]", "app.localhost"]) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of [
      "0.0.0.0",
      "::",
      "192.168.1.2",
      "example.com",
      "localhost.example.com",
      "",
    ]) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });

  it("refuses to listen off loopback without a token, and refuses weak tokens", async () => {
    const dir = seedHome(tempDir()).home;
    for (const host of ["0.0.0.0", "::", "192.0.2.1"]) {
      const error = await startServer({ home: dir, host, port: 0 }).catch((e: unknown) => e);
      expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
      expect((error as Error).message).toMatch(/without a token/);
    }
    for (const token of ["short", "has spaces in the token", "semi;colon;0123456789"]) {
      const error = await startServer({ home: dir, port: 0, token }).catch((e: unknown) => e);
      expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
    }
    await expect(startServer({ home: dir, port: 0, verbose: true } as never)).rejects.toThrow(
      /Unknown option for startServer: verbose/,
    );
  });
});

describe("without a token", () => {
  it("answers only requests addressed to a loopback name (no DNS rebinding)", async () => {
    const { request } = serve();
    expect((await request("http://localhost:4711/api/agents")).status).toBe(200);
    expect((await request("http://[::1]:4711/api/agents")).status).toBe(200);
    const rebound = await request("http://attacker.example:4711/api/agents");
    expect(rebound.status).toBe(403);
    expect(await errorCode(rebound)).toBe("E_FORBIDDEN");
  });
});

describe("with a token", () => {
  it("requires it on the API, the SSE streams and the dashboard", async () => {
    const { request, seeded } = serve({ token: TOKEN });
    const paths = [
      "/api/agents",
      "/api/agents/main/stream",
      `/api/agents/main/transcripts/${seeded.sessionId}/stream`,
      "/",
      "/app.js",
    ];
    for (const path of paths) {
      const response = await request(path);
      expect(response.status).toBe(401);
      expect(await errorCode(response)).toBe("E_UNAUTHORIZED");
    }
    const wrong = await request("/api/agents", { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    const right = await request("/api/agents", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(right.status).toBe(200);
  });

  it("also off loopback: the token, not the host name, is what admits a request", async () => {
    const { request } = serve({ token: TOKEN });
    const remote = "http://192.0.2.10:4711/api/agents";
    expect((await request(remote)).status).toBe(401);
    const admitted = await request(remote, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(admitted.status).toBe(200);
  });

  it("signs a browser in: /?token= sets an HttpOnly cookie and drops the token from the URL", async () => {
    const { request } = serve({ token: TOKEN });
    const signIn = await request(`/?token=${TOKEN}`);
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get("location")).toBe("/");
    const cookie = signIn.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^agentstate_token_4711=/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const pair = cookie.split(";")[0] ?? "";
    expect((await request("/api/agents", { headers: { cookie: pair } })).status).toBe(200);
    expect((await request("/", { headers: { cookie: pair } })).status).toBe(200);
    expect((await request("/?token=wrong-token-0123456789")).status).toBe(401);
  });
});

describe("read-only (the default)", () => {
  it("refuses every write with 403 E_READ_ONLY and changes nothing", async () => {
    const { request, seeded } = serve();
    const before = eventCount(seeded.home, seeded.activeId);
    const base = `/api/agents/main/transcripts/${seeded.activeId}`;
    const writes: Array<[string, RequestInit]> = [
      [
        `${base}/events`,
        json({ event: { type: "message", message: { role: "user", content: "hi" } } }),
      ],
      [`${base}/labels`, json({ targetId: seeded.ids.ask, label: "x" })],
      [
        `/api/agents/main/sessions/${encodeURIComponent(MAIN_KEY)}`,
        { ...json({ fields: { label: "x" } }), method: "PATCH" },
      ],
      ["/api/agents/main/sessions", { method: "DELETE" }],
      ["/api/agents", { method: "PUT", body: "{}" }],
    ];
    for (const [path, init] of writes) {
      const response = await request(path, init);
      expect(response.status).toBe(403);
      expect(await errorCode(response)).toBe("E_READ_ONLY");
    }
    expect(eventCount(seeded.home, seeded.activeId)).toBe(before);
  });
});

describe("--write", () => {
  it("appends an event, labels one and patches an entry, each visible to other connections", async () => {
    const { request, seeded, home } = serve({ write: true });
    const base = `/api/agents/main/transcripts/${seeded.activeId}`;
    const event = {
      type: "message",
      message: { role: "user", content: [{ type: "text", text: "from the API" }] },
    };
    const appended = await request(`${base}/events`, json({ event, idempotencyKey: "api-1" }));
    expect(appended.status).toBe(201);
    const stored = (await appended.json()) as { seq: number; event: { id: string } };
    const again = await request(`${base}/events`, json({ event, idempotencyKey: "api-1" }));
    expect(again.status).toBe(200);
    expect(((await again.json()) as { seq: number }).seq).toBe(stored.seq);
    expect(eventCount(seeded.home, seeded.activeId)).toBe(stored.seq);

    const labelled = await request(
      `${base}/labels`,
      json({ targetId: stored.event.id, label: "important" }),
    );
    expect(labelled.status).toBe(201);
    const patched = await request(`/api/agents/main/sessions/${encodeURIComponent(MAIN_KEY)}`, {
      ...json({
        fields: { label: "Dana B." },
        expectedVersion: home.sessions.get("main", MAIN_KEY)?.version,
      }),
      method: "PATCH",
    });
    expect(patched.status).toBe(200);
    const other = openStateHome({ home: seeded.home, create: false });
    try {
      expect(other.sessions.get("main", MAIN_KEY)?.entry.label).toBe("Dana B.");
      const last = other.transcripts.tail({ agentId: "main", sessionId: seeded.activeId }, 1)[0];
      expect(last?.event).toMatchObject({
        type: "label",
        targetId: stored.event.id,
        label: "important",
      });
    } finally {
      other.close();
    }
    const stale = await request(`/api/agents/main/sessions/${encodeURIComponent(MAIN_KEY)}`, {
      ...json({ fields: { label: "late" }, expectedVersion: 1 }),
      method: "PATCH",
    });
    expect(stale.status).toBe(409);
    expect(await errorCode(stale)).toBe("E_CONFLICT");
  });

  it("refuses cross-origin writes, bodies that are not JSON, too large or malformed", async () => {
    const { request, seeded } = serve({ write: true });
    const path = `/api/agents/main/transcripts/${seeded.activeId}/events`;
    const event = { event: { type: "message", message: { role: "user", content: "x" } } };
    const crossSite = await request(path, json(event, { origin: "http://attacker.example" }));
    expect(crossSite.status).toBe(403);
    const sameSite = await request(path, json(event, { origin: LOCAL }));
    expect(sameSite.status).toBe(201);
    const form = await request(path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "a=b",
    });
    expect(form.status).toBe(415);
    const huge = await request(
      path,
      json({ event: { type: "message", pad: "x".repeat(2 * 1024 * 1024) } }),
    );
    expect(huge.status).toBe(413);
    expect(await errorCode(huge)).toBe("E_TOO_LARGE");
    const broken = await request(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(broken.status).toBe(400);
    const header = await request(path, json({ event: { type: "session" } }));
    expect(header.status).toBe(400);
    const extra = await request(path, json({ ...event, sneaky: 1 }));
    expect(extra.status).toBe(400);
    expect(await errorCode(extra)).toBe("E_INVALID_ARGUMENT");
    const unknownAgent = await request("/api/agents/ghost/transcripts/s1/events", json(event));
    expect(unknownAgent.status).toBe(404);
  });
});

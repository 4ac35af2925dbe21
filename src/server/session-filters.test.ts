import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp, type ServerApp } from "./app.js";
import { GROUP_KEY, MAIN_KEY, ODD_KEY, seedHome } from "./test-support/seed-home.js";

const tempDir = useTempDirs();
const ORIGIN = "http://127.0.0.1:4711";

let home: StateHome;
let server: ServerApp;

beforeEach(() => {
  home = openStateHome({ home: seedHome(tempDir()).home, create: false });
  server = createApp({ home });
  home.sessions.patch("main", GROUP_KEY, { status: "failed", archivedAt: 1, lastActivityAt: 1 });
  home.sessions.patch("main", ODD_KEY, { status: "done", pinnedAt: 2, spawnedBy: MAIN_KEY });
});

afterEach(() => {
  server.close();
  home.close();
});

async function keys(query: string): Promise<{ status: number; keys?: string[]; code?: string }> {
  const response = await server.app.request(`${ORIGIN}/api/agents/main/sessions?${query}`);
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are asserted field by field
  const body: any = await response.json();
  return {
    status: response.status,
    keys: body.entries?.map((e: { sessionKey: string }) => e.sessionKey),
    code: body.error?.code,
  };
}

describe("GET /api/agents/:agentId/sessions filters and sorts", () => {
  it("filters by status, label, channel, parent, archived and pinned", async () => {
    expect(await keys("status=failed")).toEqual({ status: 200, keys: [GROUP_KEY] });
    expect((await keys("label=Dana")).keys).toEqual([MAIN_KEY]);
    expect((await keys("channel=telegram")).keys).toContain(MAIN_KEY);
    expect((await keys(`parentSessionKey=${encodeURIComponent(MAIN_KEY)}`)).keys).toEqual([
      ODD_KEY,
    ]);
    expect((await keys("archived=true")).keys).toEqual([GROUP_KEY]);
    expect((await keys("archived=false&pinned=1")).keys).toEqual([ODD_KEY]);
  });

  it("sorts by a key and pages with the cursor of that sort", async () => {
    const first = await server.app.request(
      `${ORIGIN}/api/agents/main/sessions?sort=status&limit=1`,
    );
    // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are asserted field by field
    const page: any = await first.json();
    expect(page.entries.map((e: { sessionKey: string }) => e.sessionKey)).toEqual([GROUP_KEY]);
    const rest = await keys(`sort=status&cursor=${page.nextCursor}`);
    expect(rest.keys).toEqual([ODD_KEY, MAIN_KEY]);
    expect(await keys(`sort=activity&cursor=${page.nextCursor}`)).toMatchObject({
      status: 400,
      code: "E_INVALID_ARGUMENT",
    });
  });

  it("answers 400 E_INVALID_ARGUMENT for an unknown sort or a bad flag", async () => {
    expect(await keys("sort=size")).toMatchObject({ status: 400, code: "E_INVALID_ARGUMENT" });
    expect((await keys("archived=maybe")).status).toBe(400);
  });
});

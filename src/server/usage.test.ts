import { describe, expect, it } from "vitest";
import type { AgentDayEvents, UsageReport } from "../api/usage-api.js";
import { openStateHome, type StateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp } from "./app.js";

const tempDir = useTempDirs();
const ORIGIN = "http://127.0.0.1:4711";
const DAY = 86_400_000;
const MAY_1 = Date.UTC(2026, 4, 1);

interface Days {
  days: AgentDayEvents[];
}

function assistant(time: number, model: string, input: number, cost?: number) {
  const usage = {
    input,
    output: 10,
    cacheRead: 5,
    cacheWrite: 1,
    ...(cost ? { cost: { total: cost } } : {}),
  };
  return {
    type: "message",
    timestamp: new Date(time).toISOString(),
    message: { role: "assistant", provider: "acme", model, usage, content: [] },
  };
}

function user(time: number) {
  return { type: "message", timestamp: new Date(time).toISOString(), message: { role: "user" } };
}

/** Two agents: `main` on May 1 and 2, `ops` on May 2 only. */
function seeded(): StateHome {
  const home = openStateHome({ home: tempDir() });
  const options = { ensureHeader: false };
  home.transcripts.appendMany(
    { agentId: "main", sessionId: "a" },
    [user(MAY_1), assistant(MAY_1 + 1, "big", 100, 0.5), assistant(MAY_1 + DAY, "small", 7)],
    options,
  );
  home.transcripts.appendMany(
    { agentId: "ops", sessionId: "b" },
    [user(MAY_1 + DAY), assistant(MAY_1 + DAY + 5, "big", 1000, 0.25)],
    options,
  );
  return home;
}

async function get<T = UsageReport>(
  home: StateHome,
  path: string,
): Promise<{ status: number; body: T }> {
  const { app, close } = createApp({ home });
  try {
    const res = await app.request(`${ORIGIN}${path}`);
    return { status: res.status, body: (await res.json()) as T };
  } finally {
    close();
  }
}

describe("GET /api/usage", () => {
  it("sums tokens and recorded cost by day, model or agent, with totals", async () => {
    const home = seeded();
    const byDay = await get(home, "/api/usage?by=day");
    expect(byDay.status).toBe(200);
    expect(byDay.body.groups.map((g) => [g.day, g.events, g.messages, g.inputTokens])).toEqual([
      ["2026-05-01", 2, 1, 100],
      ["2026-05-02", 3, 2, 1007],
    ]);
    expect(byDay.body.totals).toMatchObject({
      events: 5,
      messages: 3,
      inputTokens: 1107,
      outputTokens: 30,
      cacheReadTokens: 15,
      cacheWriteTokens: 3,
      pricedMessages: 2,
    });
    expect(byDay.body.totals.cost).toBeCloseTo(0.75, 12);
    const byModel = await get(home, "/api/usage?by=model");
    expect(byModel.body.groups.map((g) => [g.provider, g.model, g.messages, g.cost])).toEqual([
      ["acme", "big", 2, 0.75],
      ["acme", "small", 1, 0],
      ["", "", 0, 0],
    ]);
    const byAgent = await get(home, "/api/usage?by=agent&since=2026-05-02T12:00:00Z");
    expect(byAgent.body.groups.map((g) => [g.agentId, g.inputTokens, g.cost])).toEqual([
      ["ops", 1000, 0.25],
      ["main", 7, 0],
    ]);
    home.close();
  });

  it("counts events per agent per day, and refuses bad parameters and unknown agents", async () => {
    const home = seeded();
    const events = await get<Days>(home, `/api/usage/events?until=${MAY_1 + 3}`);
    expect(events.body.days).toEqual([{ agentId: "main", day: "2026-05-01", events: 2 }]);
    const ops = await get<Days>(home, "/api/usage/events?agentId=ops");
    expect(ops.body.days).toEqual([{ agentId: "ops", day: "2026-05-02", events: 2 }]);
    expect((await get(home, "/api/usage?by=week")).status).toBe(400);
    expect((await get(home, "/api/usage?since=yesterday")).status).toBe(400);
    expect((await get(home, "/api/usage?agentId=nobody")).status).toBe(404);
    home.close();
  });
});

import { beforeAll, describe, expect, it } from "vitest";
import type { SessionUsageReport, UsageReport } from "../../src/api/usage-api.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const MAY_1 = Date.UTC(2026, 4, 1);
const DAY = 86_400_000;

function assistant(time: number, model: string, input: number, cost?: number) {
  const usage = { input, output: 3, ...(cost === undefined ? {} : { cost: { total: cost } }) };
  return {
    type: "message",
    timestamp: new Date(time).toISOString(),
    message: { role: "assistant", provider: "acme", model, usage, content: [] },
  };
}

/** `main` talks on May 1 and 2 (one message without a recorded cost), `ops` on May 2. */
function seed(): string {
  const home = tempDir();
  const state = openStateHome({ home });
  const options = { ensureHeader: false };
  state.transcripts.appendMany(
    { agentId: "main", sessionId: "a" },
    [assistant(MAY_1, "big", 100, 0.5), assistant(MAY_1 + DAY, "small", 20)],
    options,
  );
  state.transcripts.appendMany(
    { agentId: "ops", sessionId: "b" },
    [assistant(MAY_1 + DAY, "big", 1000, 0.25)],
    options,
  );
  state.close();
  return home;
}

describe("agentstate usage", () => {
  it("prints a row per model with totals, and says how many messages recorded no cost", () => {
    const home = seed();
    const result = cli(["usage", "--by", "model", "--home", home]);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      /^MODEL\s+EVENTS\s+MESSAGES\s+INPUT\s+OUTPUT\s+CACHE READ\s+CACHE WRITE\s+COST$/,
    );
    expect(lines[1]).toMatch(/^acme\/big\s+2\s+2\s+1100\s+6\s+0\s+0\s+0\.7500$/);
    expect(lines[2]).toMatch(/^acme\/small\s+1\s+1\s+20\s+3\s+0\s+0\s+0\.0000$/);
    expect(lines[3]).toMatch(/^TOTAL\s+3\s+3\s+1120\s+9\s+0\s+0\s+0\.7500$/);
    expect(lines[4]).toBe(
      "cost: the costs messages recorded; 1 of 3 assistant messages recorded none (no price is estimated)",
    );
  });

  it("filters by agent and UTC days, as JSON", () => {
    const home = seed();
    const result = cli([
      "usage",
      "--agent",
      "main",
      "--since",
      "2026-05-02",
      "--json",
      "--home",
      home,
    ]);
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout) as UsageReport;
    expect(report.by).toBe("day");
    expect(report.groups.map((g) => [g.day, g.inputTokens])).toEqual([["2026-05-02", 20]]);
    expect(report.totals.messages).toBe(1);
    const byAgent = JSON.parse(
      cli(["usage", "--by", "agent", "--until", `${MAY_1}`, "--json", "--home", home]).stdout,
    ) as UsageReport;
    expect(byAgent.groups.map((g) => [g.agentId, g.cost])).toEqual([["main", 0.5]]);
  });

  it("exits 2 on a bad --by or time and 3 on an unknown agent, naming the agents", () => {
    const home = seed();
    const badBy = cli(["usage", "--by", "week", "--home", home]);
    expect(badBy.status).toBe(2);
    expect(badBy.stderr).toContain("--by must be one of day, model, agent");
    expect(cli(["usage", "--since", "someday", "--home", home]).status).toBe(2);
    const unknown = cli(["usage", "--agent", "nobody", "--home", home]);
    expect(unknown.status).toBe(3);
    expect(unknown.stderr).toContain("this home has agents main, ops");
  });

  it("--session KEY|ID prints one session's usage by model, hot or cold, exit 3 when unknown", () => {
    const home = seed();
    const state = openStateHome({ home });
    const ops = state.agent("ops");
    ops.lifecycle.start("agent:ops:main");
    const sessionId = ops.lifecycle.active("agent:ops:main")?.sessionId ?? "";
    const usage = { input: 40, output: 2, cacheRead: 9, cacheWrite: 1, cost: { total: 0.125 } };
    ops.transcripts.append(sessionId, {
      type: "message",
      message: { role: "assistant", provider: "acme", model: "tiny", usage, content: [] },
    });
    state.close();

    const byKey = cli(["usage", "--agent", "ops", "--session", "agent:ops:main", "--home", home]);
    expect(byKey.stderr).toBe("");
    expect(byKey.status).toBe(0);
    const lines = byKey.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`session ${sessionId}  key agent:ops:main`);
    expect(lines[1]).toMatch(
      /^MODEL\s+EVENTS\s+MESSAGES\s+INPUT\s+OUTPUT\s+CACHE READ\s+CACHE WRITE\s+TOTAL TOKENS\s+COST$/,
    );
    expect(lines.find((l) => l.startsWith("acme/tiny"))).toMatch(
      /^acme\/tiny\s+1\s+1\s+40\s+2\s+9\s+1\s+52\s+0\.1250$/,
    );

    // By id, in an agent chosen by --agent, cold, as JSON: the same numbers from the archive.
    const again = openStateHome({ home });
    again.agent("main").cold.move("a");
    again.close();
    const cold = cli(["usage", "--agent", "main", "--session", "a", "--json", "--home", home]);
    expect(cold.status).toBe(0);
    const report = JSON.parse(cold.stdout) as SessionUsageReport;
    expect(report.cold).toBe(true);
    expect(report.models.map((m) => [m.model, m.inputTokens, m.cost])).toEqual([
      ["big", 100, 0.5],
      ["small", 20, 0],
    ]);
    expect(report.totals).toMatchObject({ messages: 2, pricedMessages: 1, totalTokens: 126 });

    const unknown = cli(["usage", "--agent", "main", "--session", "nope", "--home", home]);
    expect(unknown.status).toBe(3);
    expect(unknown.stderr).toContain('no session or session key "nope" for agent main');
    const mixed = cli([
      "usage",
      "--session",
      "a",
      "--by",
      "model",
      "--agent",
      "main",
      "--home",
      home,
    ]);
    expect(mixed.status).toBe(2);
  });
});

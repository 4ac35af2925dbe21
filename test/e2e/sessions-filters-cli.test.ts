import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

/** Entries shaped like real ones: a main key, subagents it spawned, a pinned and an archived key. */
function seed(): string {
  const dir = tempDir();
  const home = openStateHome({ home: dir });
  try {
    const put = (key: string, entry: Record<string, unknown>) =>
      home.sessions.upsert("main", key, { sessionId: key, ...entry } as never);
    put("agent:main:main", {
      updatedAt: 1000,
      lastChannel: "telegram",
      model: "kimi-k2.6",
      pinnedAt: 900,
      lastInteractionAt: 5000,
    });
    put("agent:main:subagent:a", {
      updatedAt: 3000,
      status: "failed",
      channel: "whatsapp",
      label: "uiux-agent",
      spawnedBy: "agent:main:main",
      model: "us.anthropic.claude-opus-4-6-v1",
    });
    put("agent:main:subagent:b", {
      updatedAt: 2000,
      status: "done",
      channel: "whatsapp",
      label: "ultraplan-dnd-remodel",
      spawnedBy: "agent:main:main",
      model: "us.anthropic.claude-opus-4-6-v1",
    });
    put("agent:main:cron:old", {
      updatedAt: 4000,
      status: "timeout",
      label: "Cron: Daily Brief",
      archivedAt: 4000,
      model: "kimi-k2.6",
    });
  } finally {
    home.close();
  }
  return dir;
}

function lister(home: string) {
  return (...args: string[]) => {
    const result = cli(["sessions", "list", "--agent", "main", "--json", "--home", home, ...args]);
    expect(result.stderr).toBe("");
    return JSON.parse(result.stdout) as {
      entries: { sessionKey: string }[];
      nextCursor: string | null;
    };
  };
}

describe("agentstate sessions list filters and sorts", () => {
  it("filters by status, channel, model, label, parent, archived and pinned", () => {
    const home = seed();
    const list = lister(home);
    const keys = (...args: string[]) => list(...args).entries.map((e) => e.sessionKey);
    expect(keys("--status", "failed")).toEqual(["agent:main:subagent:a"]);
    expect(keys("--channel", "telegram")).toEqual(["agent:main:main"]);
    expect(keys("--model", "kimi-k2.6")).toEqual(["agent:main:cron:old", "agent:main:main"]);
    expect(keys("--label", "Cron: Daily Brief")).toEqual(["agent:main:cron:old"]);
    expect(keys("--parent", "agent:main:main", "--channel", "whatsapp")).toEqual([
      "agent:main:subagent:a",
      "agent:main:subagent:b",
    ]);
    expect(keys("--archived", "yes")).toEqual(["agent:main:cron:old"]);
    expect(keys("--archived", "no", "--model", "kimi-k2.6")).toEqual(["agent:main:main"]);
    expect(keys("--pinned", "yes")).toEqual(["agent:main:main"]);
    const table = cli(["sessions", "list", "--status", "done", "--agent", "main", "--home", home]);
    expect(table.status).toBe(0);
    expect(table.stdout).toContain("ultraplan-dnd-remodel");
    expect(table.stdout).not.toContain("uiux-agent");
  });

  it("sorts by activity and by label, page by page with the cursor of that sort", () => {
    const home = seed();
    const list = lister(home);
    const pages = (sort: string) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = list("--sort", sort, "--limit", "1", ...(cursor ? ["--cursor", cursor] : []));
        seen.push(...page.entries.map((e) => e.sessionKey));
        cursor = page.nextCursor;
      } while (cursor !== null && seen.length < 10);
      return seen;
    };
    // main's last interaction (5000) is later than every update.
    expect(pages("activity")).toEqual([
      "agent:main:main",
      "agent:main:cron:old",
      "agent:main:subagent:a",
      "agent:main:subagent:b",
    ]);
    const table = cli(["sessions", "list", "--sort", "label", "--limit", "1", "--home", home]);
    expect(table.stdout).toMatch(/^more: --sort label --cursor \S+$/m);
    // Z to A by bytes ("u" > "C"), the unlabelled entry last.
    expect(pages("label")).toEqual([
      "agent:main:subagent:b",
      "agent:main:subagent:a",
      "agent:main:cron:old",
      "agent:main:main",
    ]);
  });

  it("exits 2 naming an unknown sort, a bad yes/no and a cursor of another sort", () => {
    const home = seed();
    const run = (...args: string[]) =>
      cli(["sessions", "list", "--agent", "main", "--home", home, ...args]);
    const sort = run("--sort", "size");
    expect(sort.status).toBe(2);
    expect(sort.stderr).toContain('"size"');
    expect(sort.stderr).toContain("activity");
    const flag = run("--archived", "maybe");
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain("--archived");
    const { nextCursor } = lister(home)("--sort", "label", "--limit", "1");
    const other = run("--sort", "activity", "--cursor", String(nextCursor));
    expect(other.status).toBe(2);
    expect(other.stderr).toContain('"label"');
    expect(run("--status", "").status).toBe(2);
  });
});

import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { modeOf, useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const KEY = "agent:main:main";
const GROUP_KEY = "agent:main:telegram:group:-5027021161";

interface Seeded {
  home: string;
  /** The first session of KEY: it holds the conversation and was then reset. */
  sessionId: string;
  activeId: string;
  researchId: string;
  expectedJsonl: string;
}

const text = (role: string, body: string) => ({
  type: "message",
  message: { role, content: [{ type: "text", text: body }] },
});

/** A home with a reset session key, a conversation with tools, a compaction and a branch. */
function seed(): Seeded {
  const dir = tempDir();
  const home = openStateHome({ home: dir });
  try {
    const { sessionId } = home.sessions.start("main", KEY);
    home.sessions.patch("main", KEY, {
      chatType: "direct",
      channel: "telegram",
      modelProvider: "anthropic",
      model: "claude-sonnet-4-5",
      label: "Dana",
    });
    const scope = { agentId: "main", sessionId };
    const ask = home.transcripts.append(scope, text("user", "Remind me to water the basil."));
    home.transcripts.append(scope, {
      type: "message",
      message: {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Use the reminders tool." },
          {
            type: "toolCall",
            id: "toolu_01",
            name: "reminders_add",
            arguments: { text: "Water the basil" },
          },
        ],
        stopReason: "toolUse",
      },
    });
    home.transcripts.append(scope, {
      type: "message",
      message: {
        role: "toolResult",
        toolCallId: "toolu_01",
        toolName: "reminders_add",
        content: [{ type: "text", text: "Reminder created for 08:00" }],
        isError: false,
      },
    });
    home.transcripts.append(scope, text("assistant", "Done: I will remind you at 08:00."));
    home.transcripts.append(scope, {
      type: "compaction",
      summary: "## Goal\nKeep the garden watered.",
      tokensBefore: 9120,
    });
    home.transcripts.branch(scope, ask.event.id);
    home.transcripts.append(scope, text("assistant", "Which plant, the basil or the tomatoes?"));
    const { sessionId: activeId } = home.sessions.reset("main", KEY, { reason: "idle" });
    home.sessions.start("main", GROUP_KEY);
    const { sessionId: researchId } = home.sessions.start("research", "agent:research:main");
    home.transcripts.append(
      { agentId: "research", sessionId: researchId },
      text("user", "Basil varieties that like shade?"),
    );
    const expectedJsonl = [...home.transcripts.exportJsonl(scope)].join("");
    return { home: dir, sessionId, activeId, researchId, expectedJsonl };
  } finally {
    home.close();
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: asserting no ANSI escapes is the point
const ESCAPE = /\u001b/;

describe("agentstate sessions and transcript --help", () => {
  const commands = [
    ["sessions"],
    ["sessions", "list"],
    ["sessions", "show"],
    ["transcript"],
    ["transcript", "show"],
    ["transcript", "export"],
    ["transcript", "search"],
    ["transcript", "list"],
  ];
  for (const command of commands) {
    it(`documents ${command.join(" ")}`, () => {
      const result = cli([...command, "--help"]);
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/Usage: agentstate/);
      if (command.length === 2) expect(result.stdout).toContain("--home");
      if (command.length === 2 && command[1] !== "export")
        expect(result.stdout).toContain("--json");
    });
  }
});

describe("agentstate sessions", () => {
  it("lists entries as a table and as JSON, page by page", () => {
    const { home, activeId } = seed();
    const table = cli(["sessions", "list", "--agent", "main", "--home", home]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^KEY\s+SESSION\s+UPDATED\s+CHAT\s+CHANNEL\s+MODEL\s+LABEL$/m);
    const row = table.stdout.split("\n").find((line) => line.startsWith(`${KEY} `)) ?? "";
    for (const cell of [activeId, "direct", "telegram", "anthropic/claude-sonnet-4-5", "Dana"]) {
      expect(row).toContain(cell);
    }
    expect(table.stdout).not.toContain("--cursor");

    const first = JSON.parse(
      cli(["sessions", "list", "--agent", "main", "--limit", "1", "--json", "--home", home]).stdout,
    );
    expect(first.entries).toHaveLength(1);
    expect(typeof first.nextCursor).toBe("string");
    const next = cli([
      "sessions",
      "list",
      "--agent",
      "main",
      "--cursor",
      first.nextCursor,
      "--json",
      "--home",
      home,
    ]);
    const second = JSON.parse(next.stdout);
    const keys = [...first.entries, ...second.entries].map(
      (e: { sessionKey: string }) => e.sessionKey,
    );
    expect(keys.sort()).toEqual([KEY, GROUP_KEY].sort());
    expect(second.nextCursor).toBeNull();
  });

  it("filters by prefix and by update time", () => {
    const { home } = seed();
    const list = (...args: string[]) =>
      JSON.parse(
        cli(["sessions", "list", "--agent", "main", "--json", "--home", home, ...args]).stdout,
      );
    expect(
      list("--prefix", "agent:main:tele").entries.map((e: { sessionKey: string }) => e.sessionKey),
    ).toEqual([GROUP_KEY]);
    expect(list("--since", "2999-01-01T00:00:00Z").entries).toEqual([]);
    expect(list("--since", "0").entries).toHaveLength(2);
    const bad = cli([
      "sessions",
      "list",
      "--agent",
      "main",
      "--since",
      "yesterday",
      "--home",
      home,
    ]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('"yesterday"');
  });

  it("shows an entry and the history of its key", () => {
    const { home, sessionId, activeId } = seed();
    const shown = cli(["sessions", "show", KEY, "--agent", "main", "--home", home]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/^key:\s+agent:main:main$/m);
    expect(shown.stdout).toMatch(/^chatType:\s+direct$/m);
    expect(shown.stdout).toMatch(new RegExp(`^\\*\\s+${activeId}\\s.*\\sidle\\s+1$`, "m"));
    expect(shown.stdout).toMatch(new RegExp(`^\\s+${sessionId}\\s.*\\s7$`, "m"));

    const json = JSON.parse(
      cli(["sessions", "show", KEY, "--agent", "main", "--json", "--home", home]).stdout,
    );
    expect(json.entry).toMatchObject({
      sessionKey: KEY,
      entry: { sessionId: activeId, label: "Dana" },
    });
    expect(json.history.map((s: { sessionId: string }) => s.sessionId)).toEqual([
      sessionId,
      activeId,
    ]);
    expect(json.history[0].endedAt).toEqual(expect.any(Number));
    expect(json.history[1]).toMatchObject({
      resetReason: "idle",
      predecessorId: sessionId,
      endedAt: null,
    });
  });
});

describe("agentstate transcript show", () => {
  it("renders the conversation without color when stdout is not a terminal", () => {
    const { home, sessionId } = seed();
    const result = cli(["transcript", "show", sessionId, "--agent", "main", "--home", home]);
    expect(result.status).toBe(0);
    const out = result.stdout;
    expect(out).not.toMatch(ESCAPE);
    expect(out).toMatch(
      /^#2 +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +user\n {4}Remind me to water the basil\.$/m,
    );
    expect(out).toContain("    thinking: Use the reminders tool.");
    expect(out).toContain('    → reminders_add(text="Water the basil")');
    expect(out).toMatch(/tool +← reminders_add: Reminder created for 08:00$/m);
    expect(out).toContain("══ compaction (9120 tokens before)");
    expect(out).toContain("    ## Goal\n    Keep the garden watered.");
    expect(out).toMatch(/↳ branch from [0-9a-f]+\n#7 .* assistant\n {4}Which plant/);
  });

  it("prints the stored events as JSON and pages with --after and --limit", () => {
    const { home, sessionId } = seed();
    const show = (...args: string[]) =>
      cli(["transcript", "show", sessionId, "--agent", "main", "--home", home, ...args]);
    const all = JSON.parse(show("--json").stdout);
    expect(all.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(Object.keys(all[0]).sort()).toEqual(["event", "seq"]);
    expect(all[0].event).toMatchObject({ type: "session", id: sessionId });
    expect(all[5].event).toMatchObject({ type: "compaction", tokensBefore: 9120 });

    const page = JSON.parse(show("--after", "2", "--limit", "2", "--json").stdout);
    expect(page.map((e: { seq: number }) => e.seq)).toEqual([3, 4]);
    expect(show("--after", "2", "--limit", "2").stdout).toContain("3 more events: --after 4");
    expect(show("--limit", "0").status).toBe(2);
  });
});

describe("agentstate transcript export", () => {
  it("writes the legacy lines to stdout", () => {
    const { home, sessionId, expectedJsonl } = seed();
    const result = cli(["transcript", "export", sessionId, "--agent", "main", "--home", home]);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(expectedJsonl);
  });

  it("writes a private file, refuses to overwrite it without --force, leaves no temp file", () => {
    const { home, sessionId, expectedJsonl } = seed();
    const dir = tempDir();
    const out = join(dir, "session-export.txt");
    const exportTo = (...args: string[]) =>
      cli([
        "transcript",
        "export",
        sessionId,
        "--agent",
        "main",
        "--out",
        out,
        "--home",
        home,
        ...args,
      ]);
    expect(exportTo().status).toBe(0);
    expect(readFileSync(out, "utf8")).toBe(expectedJsonl);
    expect(modeOf(statSync(out))).toBe(0o600);

    writeFileSync(out, "keep me");
    const refused = exportTo();
    expect(refused.status).toBe(5);
    expect(refused.stderr).toContain(out);
    expect(refused.stderr).toContain("--force");
    expect(readFileSync(out, "utf8")).toBe("keep me");

    expect(exportTo("--force").status).toBe(0);
    expect(readFileSync(out, "utf8")).toBe(expectedJsonl);
    expect(modeOf(statSync(out))).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["session-export.txt"]);
  });

  it("names the file when its directory does not exist", () => {
    const { home, sessionId } = seed();
    const out = join(tempDir(), "missing", "x.txt");
    const result = cli([
      "transcript",
      "export",
      sessionId,
      "--agent",
      "main",
      "--out",
      out,
      "--home",
      home,
    ]);
    expect(result.status).toBe(7);
    expect(result.stderr).toContain(out);
    expect(existsSync(join(out, ".."))).toBe(false);
  });
});

describe("agentstate transcript search and list", () => {
  it("finds CJK words inside unspaced text, prefixes and tool-call arguments, and marks them", () => {
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    const { sessionId } = home.sessions.start("main", KEY);
    const scope = { agentId: "main", sessionId };
    home.transcripts.append(scope, text("user", "请把第三季度销售数据发给我"));
    home.transcripts.append(scope, {
      type: "message",
      message: {
        role: "assistant",
        content: [
          { type: "toolCall", id: "t1", name: "exec", arguments: { command: "deploy.sh --prod" } },
        ],
      },
    });
    home.close();
    const cjk = cli(["transcript", "search", "销售数据", "--home", dir]);
    expect(cjk.status).toBe(0);
    expect(cjk.stdout).toContain("[销售数据]");
    const prefix = JSON.parse(
      cli(["transcript", "search", "deplo*", "--json", "--home", dir]).stdout,
    );
    expect(prefix.map((h: { seq: number }) => h.seq)).toEqual([3]);
    expect(cli(["transcript", "search", "*", "--home", dir]).status).toBe(2);
  });

  it("ranks hits across agents and marks the matches", () => {
    const { home, sessionId, researchId } = seed();
    const text = cli(["transcript", "search", "basil", "--home", home]);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain("[basil]");
    expect(text.stdout).toContain("[Basil]");
    expect(text.stdout).not.toMatch(ESCAPE);

    const hits = JSON.parse(
      cli(["transcript", "search", "basil", "--json", "--home", home]).stdout,
    );
    const where = hits.map(
      (h: { agentId: string; sessionId: string }) => `${h.agentId}/${h.sessionId}`,
    );
    expect(where).toEqual(expect.arrayContaining([`main/${sessionId}`, `research/${researchId}`]));
    expect(hits[0]).toMatchObject({
      seq: expect.any(Number),
      snippet: expect.any(String),
      highlights: expect.any(Array),
    });

    const one = JSON.parse(
      cli(["transcript", "search", "basil", "--agent", "research", "--json", "--home", home])
        .stdout,
    );
    expect(one.map((h: { agentId: string }) => h.agentId)).toEqual(["research"]);
    const inSession = JSON.parse(
      cli([
        "transcript",
        "search",
        "water",
        "basil",
        "--session",
        sessionId,
        "--limit",
        "1",
        "--json",
        "--home",
        home,
      ]).stdout,
    );
    expect(inSession).toHaveLength(1);
    expect(inSession[0].sessionId).toBe(sessionId);
  });

  it("accepts hostile query strings", () => {
    const { home } = seed();
    for (const query of ["AND", 'basil AND "to*', "NEAR(", "basil OR"]) {
      const result = cli(["transcript", "search", query, "--home", home]);
      expect(result.status, `${query}: ${result.stderr}`).toBe(0);
      const json = cli(["transcript", "search", query, "--json", "--home", home]);
      expect(Array.isArray(JSON.parse(json.stdout))).toBe(true);
    }
    // Input with no word at all is not a search: a usage error, still never a crash.
    for (const query of ['"', "*", "'", "-", "()"]) {
      const result = cli(["transcript", "search", query, "--home", home]);
      expect(result.status, `${query}: ${result.stderr}`).toBe(2);
      const json = cli(["transcript", "search", query, "--json", "--home", home]);
      expect(JSON.parse(json.stderr).error.code).toBe("E_INVALID_ARGUMENT");
    }
  });

  it("lists transcripts of every agent or one", () => {
    const { home, sessionId, researchId } = seed();
    const table = cli(["transcript", "list", "--home", home]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^AGENT\s+SESSION\s+UPDATED\s+EVENTS$/m);
    expect(table.stdout).toMatch(new RegExp(`^main\\s+${sessionId}\\s+\\S+\\s+7$`, "m"));
    const json = JSON.parse(
      cli(["transcript", "list", "--agent", "research", "--json", "--home", home]).stdout,
    );
    expect(json).toEqual([
      expect.objectContaining({ agentId: "research", sessionId: researchId, eventCount: 2 }),
    ]);
  });
});

describe("agentstate sessions and transcript errors", () => {
  it("exits 3 and names an unknown agent, without creating it", () => {
    const { home, sessionId } = seed();
    const reads = [
      ["sessions", "list", "--agent", "ghost"],
      ["sessions", "show", KEY, "--agent", "ghost"],
      ["transcript", "show", sessionId, "--agent", "ghost"],
      ["transcript", "export", sessionId, "--agent", "ghost"],
      ["transcript", "search", "basil", "--agent", "ghost"],
      ["transcript", "list", "--agent", "ghost"],
    ];
    for (const args of reads) {
      const result = cli([...args, "--home", home]);
      expect(result.status, args.join(" ")).toBe(3);
      expect(result.stderr).toContain('"ghost"');
    }
    expect(existsSync(join(home, "agents", "ghost"))).toBe(false);
    const status = JSON.parse(cli(["status", "--json", "--home", home]).stdout);
    expect(status.databases.map((d: { agentId: string | null }) => d.agentId)).toEqual([
      null,
      "main",
      "research",
    ]);
  });

  it("exits 3 naming a session to search in that does not exist", () => {
    const { home } = seed();
    for (const scope of [[], ["--agent", "main"]]) {
      const result = cli([
        "transcript",
        "search",
        "basil",
        "--session",
        "nosuch",
        ...scope,
        "--home",
        home,
      ]);
      expect(result.status, scope.join(" ")).toBe(3);
      expect(result.stderr).toContain("nosuch");
      expect(result.stdout).toBe("");
      const json = cli([
        "transcript",
        "search",
        "basil",
        "--session",
        "nosuch",
        ...scope,
        "--json",
        "--home",
        home,
      ]);
      expect(json.status).toBe(3);
      expect(JSON.parse(json.stderr).error).toMatchObject({ code: "E_NOT_FOUND" });
    }
  });

  it("exits 2 on a search with no words", () => {
    const { home } = seed();
    for (const query of ["", "   ", " ?! -- ", '"" ()']) {
      const result = cli(["transcript", "search", query, "--home", home]);
      expect(result.status, JSON.stringify(query)).toBe(2);
      expect(result.stderr).toMatch(/search query has no words/);
      expect(result.stdout).toBe("");
    }
  });

  it("exits 3 for a missing session, session key or home", () => {
    const { home } = seed();
    for (const args of [
      ["transcript", "show", "no-such-session", "--agent", "main"],
      ["transcript", "export", "no-such-session", "--agent", "main"],
      ["sessions", "show", "agent:main:nope", "--agent", "main"],
    ]) {
      const result = cli([...args, "--home", home]);
      expect(result.status, args.join(" ")).toBe(3);
      expect(result.stderr).toContain(args[2]);
    }
    const json = cli([
      "transcript",
      "show",
      "no-such-session",
      "--agent",
      "main",
      "--json",
      "--home",
      home,
    ]);
    expect(JSON.parse(json.stderr).error).toMatchObject({
      code: "E_NOT_FOUND",
      details: { agentId: "main", sessionId: "no-such-session" },
    });
    const nowhere = join(tempDir(), "nowhere");
    expect(cli(["sessions", "list", "--agent", "main", "--home", nowhere]).status).toBe(3);
    expect(existsSync(nowhere)).toBe(false);
  });
});

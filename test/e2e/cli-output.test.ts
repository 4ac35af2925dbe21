import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

beforeAll(requireBuild);

// One home per describe block, read by all its tests (they only read), removed after them.
const made: string[] = [];
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "agentstate-test-"));
  made.push(dir);
  return dir;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding escape sequences is the point
const ESCAPE = /\u001b/;

/** Runs the CLI through bash, so the flags of a `more:` line are read back as a user's shell would. */
function shell(args: string, extra = ""): { status: number; stdout: string } {
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} ${args} ${extra}`;
  const result = spawnSync("bash", ["-c", command], {
    encoding: "utf8",
    env: { ...process.env, AGENTSTATE_HOME: "" },
  });
  return { status: result.status ?? -1, stdout: result.stdout };
}

/** Follows the `more:` lines of a text list to its end: the first column of every row, in order. */
function followPages(args: string): { rows: string[]; pages: number } {
  const rows: string[] = [];
  let extra = "";
  for (let pages = 1; pages < 100; pages++) {
    const { status, stdout } = shell(args, extra);
    expect(status).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    const more = lines.at(-1)?.startsWith("more: ") ? lines.pop()?.slice("more: ".length) : null;
    rows.push(...lines.slice(1).map((line) => line.split(/ {2,}/)[0] ?? ""));
    if (more === null || more === undefined) return { rows, pages };
    extra = more;
  }
  throw new Error("the more: lines never ended");
}

function readRows<T>(path: string, sql: string, ...params: unknown[]): T[] {
  const db = openRawSqlite(path, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

const DAY = 86_400_000;

function seedLists(): string {
  const dir = tempDir();
  const home = openStateHome({ home: dir });
  try {
    for (let i = 0; i < 23; i++) home.sessions.start("main", `agent:main:chat-${i}`);
    for (let i = 0; i < 37; i++) home.kv.set("plugin.demo", `key-${String(i).padStart(2, "0")}`, i);
    // Keys a shell must be given quoted, at page boundaries.
    home.kv.set("quoted", "a b", 1);
    home.kv.set("quoted", "it's", 2);
    home.kv.set("quoted", "z$HOME", 3);
    home.kv.set("long", "v", "x".repeat(200));
    for (let i = 0; i < 11; i++) {
      home.cron.add({
        id: `job-${String(i).padStart(2, "0")}`,
        schedule: { kind: "every", everyMs: DAY },
      });
    }
    for (let i = 0; i < 19; i++) {
      home.cron.recordRun("job-00", {
        status: i === 0 ? "error" : "ok",
        ranAt: Date.UTC(2026, 0, 1) + i * DAY,
        durationMs: 5,
        error: i === 0 ? `quota exceeded: ${"e".repeat(120)} end` : undefined,
      });
    }
  } finally {
    home.close();
  }
  return dir;
}

describe("text lists end with a more: line until the last page", () => {
  const home = seedLists();

  it("sessions list pages by --cursor, every entry exactly once", () => {
    const { rows, pages } = followPages(`sessions list --agent main --limit 5 --home ${home}`);
    const keys = readRows<{ session_key: string }>(
      join(home, "agents/main/agent/agent.sqlite"),
      "SELECT session_key FROM session_entries",
    ).map((r) => r.session_key);
    expect(keys).toHaveLength(23);
    expect(pages).toBe(5);
    expect(rows.sort()).toEqual(keys.sort());
  });

  it("kv list pages by --after, every entry exactly once, quoted keys included", () => {
    const state = join(home, "state/state.sqlite");
    for (const [scope, limit] of [
      ["plugin.demo", 10],
      ["quoted", 1],
    ] as const) {
      const { rows } = followPages(`kv list ${scope} --limit ${limit} --home ${home}`);
      const keys = readRows<{ key: string }>(state, "SELECT key FROM kv WHERE scope = ?", scope);
      expect(rows.length).toBe(keys.length);
      expect(rows.sort()).toEqual(keys.map((k) => k.key).sort());
    }
  });

  it("cron list pages by --after and cron runs by --before", () => {
    const state = join(home, "state/state.sqlite");
    const jobs = followPages(`cron list --limit 4 --home ${home}`);
    const ids = readRows<{ job_id: string }>(state, "SELECT job_id FROM cron_jobs");
    expect(jobs.pages).toBe(3);
    expect(jobs.rows.sort()).toEqual(ids.map((r) => r.job_id).sort());

    const runs = followPages(`cron runs job-00 --limit 6 --home ${home}`);
    const ranAt = readRows<{ ran_at: number }>(
      state,
      "SELECT ran_at FROM cron_run_logs WHERE job_id = 'job-00' ORDER BY ran_at DESC",
    ).map((r) => new Date(r.ran_at).toISOString());
    expect(ranAt).toHaveLength(19);
    expect(runs.pages).toBe(4);
    expect(runs.rows).toEqual(ranAt);
  });

  it("prints no more: line when the page holds every row", () => {
    const out = cli(["sessions", "list", "--agent", "main", "--limit", "23", "--home", home]);
    expect(out.stdout).not.toContain("more:");
    expect(
      cli(["kv", "list", "plugin.demo", "--limit", "37", "--home", home]).stdout,
    ).not.toContain("more:");
  });

  it("lists without a cursor name a larger --limit", () => {
    const out = cli(["transcript", "list", "--limit", "1", "--home", home]);
    // Every session start wrote a transcript header: 23 sessions have a transcript.
    expect(out.stdout.trimEnd().split("\n").at(-1)).toBe("more: --limit 2");
    expect(cli(["transcript", "list", "--limit", "23", "--home", home]).stdout).not.toContain(
      "more:",
    );
  });

  it("--json output keeps its shape", () => {
    const listed = JSON.parse(
      cli(["kv", "list", "plugin.demo", "--limit", "3", "--json", "--home", home]).stdout,
    );
    expect(listed.map((e: { key: string }) => e.key)).toEqual(["key-00", "key-01", "key-02"]);
  });
});

describe("cut cells end with … and --full shows them whole", () => {
  const home = seedLists();

  it("kv list cuts values at 80 characters", () => {
    const json = JSON.stringify("x".repeat(200));
    const cut = cli(["kv", "list", "long", "--home", home]).stdout;
    expect(cut).toContain(` ${json.slice(0, 79)}…\n`);
    expect(cut).not.toContain(json);
    expect(cli(["kv", "list", "long", "--full", "--home", home]).stdout).toContain(` ${json}\n`);
  });

  it("cron runs cuts errors at 60 characters", () => {
    const error = `quota exceeded: ${"e".repeat(120)} end`;
    const cut = cli(["cron", "runs", "job-00", "--limit", "50", "--home", home]).stdout;
    expect(cut).toContain(` ${error.slice(0, 59)}…\n`);
    const full = cli(["cron", "runs", "job-00", "--limit", "50", "--full", "--home", home]).stdout;
    expect(full).toContain(` ${error}\n`);
  });
});

describe("transcript show", () => {
  function seedTranscript(): { home: string; sessionId: string } {
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    try {
      const { sessionId } = home.sessions.start("main", "agent:main:main");
      const scope = { agentId: "main", sessionId };
      home.transcripts.append(scope, { type: "session_info", name: "Fix\tthe\nbuild" });
      const ask = home.transcripts.append(scope, {
        type: "message",
        message: { role: "user", content: [{ type: "text", text: "\u001b[1mbold\u001b[0m ask" }] },
      });
      home.transcripts.append(scope, {
        type: "label",
        targetId: ask.event.id,
        label: "first\task\nhere",
      });
      home.transcripts.append(scope, {
        type: "message",
        message: {
          role: "bashExecution",
          command: "ls --color=always",
          output: "\u001b[01;34msrc\u001b[0m\n\u001b[01;32mrun.sh\u001b[0m\n",
          exitCode: 1,
          cancelled: false,
          truncated: false,
          timestamp: 1,
        },
      });
      home.transcripts.append(scope, {
        type: "message",
        message: {
          role: "assistant",
          content: [
            {
              type: "toolCall",
              id: "t1",
              name: "write",
              arguments: { path: "notes.md", text: "n".repeat(300) },
            },
          ],
        },
      });
      home.transcripts.append(scope, {
        type: "message",
        message: {
          role: "toolResult",
          toolCallId: "t1",
          toolName: "write",
          content: [{ type: "text", text: `wrote ${"w".repeat(300)} done` }],
          isError: false,
        },
      });
      return { home: dir, sessionId };
    } finally {
      home.close();
    }
  }

  const { home, sessionId } = seedTranscript();
  const show = (...flags: string[]) =>
    cli(["transcript", "show", sessionId, "--agent", "main", "--home", home, ...flags]);

  it("renders names, labels, commands and escape codes readably", () => {
    const { status, stdout } = show();
    expect(status).toBe(0);
    expect(stdout).not.toMatch(ESCAPE);
    expect(stdout).toMatch(/^#2 +\S+ \S+ +system +session named "Fix the build"$/m);
    expect(stdout).toMatch(/^#3 +\S+ \S+ +user\n {4}bold ask$/m);
    expect(stdout).toMatch(/^#4 +\S+ \S+ +system +label [0-9a-f]+ → "first ask here"$/m);
    expect(stdout).toMatch(
      /^#5 +\S+ \S+ +bash +\$ ls --color=always\n {4}src\n {4}run\.sh\n {4}\[exit 1\]$/m,
    );
    for (const line of stdout.split("\n")) expect(Array.from(line).length).toBeLessThanOrEqual(100);
  });

  it("cuts long arguments and results with … and says how to see them whole", () => {
    const { stdout } = show();
    expect(stdout).toMatch(/^ {4}→ write\(path="notes\.md", text="n+…$/m);
    expect(stdout).toMatch(/^#7 +\S+ \S+ +tool +← write: wrote w+…$/m);
    expect(stdout.trimEnd().split("\n").at(-1)).toBe(
      "2 texts cut to fit (…): --full shows them whole",
    );
  });

  it("--full shows them whole", () => {
    const { stdout } = show("--full");
    expect(stdout).toContain(`    → write(path="notes.md", text="${"n".repeat(300)}")\n`);
    expect(stdout).toContain(`← write: wrote ${"w".repeat(300)} done\n`);
    expect(stdout).not.toContain("…");
    expect(stdout).not.toContain("--full");
  });
});

describe("--help of the list and show commands", () => {
  const commands = [
    ["sessions", "list"],
    ["kv", "list"],
    ["cron", "list"],
    ["cron", "runs"],
    ["memory", "topics"],
    ["memory", "facts"],
    ["transcript", "show"],
    ["transcript", "list"],
    ["backup", "list"],
  ];
  for (const command of commands) {
    it(`${command.join(" ")} ends with examples of itself`, () => {
      const { status, stdout } = cli([...command, "--help"]);
      expect(status).toBe(0);
      const examples = stdout.slice(stdout.lastIndexOf("\nExamples:\n"));
      expect(examples).toMatch(
        new RegExp(`^\\nExamples:\\n {2}agentstate ${command.join(" ")}[ \\n]`),
      );
    });
  }
});

import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { VfsStore } from "../../src/stores/agent/vfs-store.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

/** The names listed in the `Commands:` section of a help text (without `help` itself). */
function subcommandsOf(help: string): string[] {
  const start = help.indexOf("\nCommands:\n");
  if (start === -1) return [];
  const names: string[] = [];
  for (const line of help.slice(start + "\nCommands:\n".length).split("\n")) {
    if (line.trim() === "") break;
    // An entry starts two spaces in; a wrapped description is indented further.
    const name = /^ {2}([a-z][\w-]*)/.exec(line)?.[1];
    if (name !== undefined && name !== "help") names.push(name);
  }
  return names;
}

/** The help of every command path, found by walking `Commands:` from the program down. */
function helpTree(): Map<string, string> {
  const helps = new Map<string, string>();
  const pending: string[][] = [[]];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    const result = cli([...path, "--help"]);
    expect(result.status, `${path.join(" ")} --help`).toBe(0);
    helps.set(path.join(" "), result.stdout);
    for (const name of subcommandsOf(result.stdout)) pending.push([...path, name]);
  }
  return helps;
}

/** The lines of the last `Examples:` section, up to the first blank line. */
function examplesOf(help: string): string[] | null {
  const at = help.lastIndexOf("\nExamples:\n");
  if (at === -1) return null;
  const rest = help.slice(at + "\nExamples:\n".length).split("\n");
  const end = rest.findIndex((line) => line.trim() === "");
  return (end === -1 ? rest : rest.slice(0, end)).map((line) => line.trim());
}

/** The `--flags` an example passes to agentstate: before a pipe, before a trailing comment. */
function flagsOf(example: string): string[] {
  const invocation = example.split(/ {2,}/)[0]?.split(" | ")[0] ?? "";
  return invocation.split(/\s+/).filter((word) => /^--?[a-zA-Z]/.test(word));
}

describe("every --help ends with examples", () => {
  let helps = new Map<string, string>();
  beforeAll(() => {
    helps = helpTree();
  }, 180_000);

  it("walks the real command tree: each command has 2 or more examples of itself", () => {
    // Not a hand-kept list: the walk found the groups and their subcommands.
    expect(helps.has("backup restore")).toBe(true);
    expect(helps.has("memory recall")).toBe(true);
    expect(helps.size).toBeGreaterThan(30);
    const problems: string[] = [];
    for (const [path, help] of helps) {
      const examples = examplesOf(help);
      const name = path === "" ? "agentstate" : `agentstate ${path}`;
      if (examples === null || examples.length < 2) {
        problems.push(`${name}: no Examples: section with 2 or more lines`);
        continue;
      }
      for (const example of examples) {
        if (example !== name && !example.startsWith(`${name} `)) {
          problems.push(`${name}: example does not run it: ${example}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("uses only flags the command it runs has", () => {
    const problems: string[] = [];
    for (const help of helps.values()) {
      for (const example of examplesOf(help) ?? []) {
        const words = example.split(/\s+/).slice(1);
        // The deepest command path the example names is the one whose options it uses.
        let path = "";
        for (const word of words) {
          const next = path === "" ? word : `${path} ${word}`;
          if (!helps.has(next)) break;
          path = next;
        }
        const options = helps.get(path) ?? "";
        for (const flag of flagsOf(example)) {
          if (!new RegExp(`(^|[ ,])${flag}([ ,]|$)`, "m").test(options)) {
            problems.push(`agentstate ${path}: ${flag} in "${example}" is not one of its options`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });
});

interface UsageCase {
  what: string;
  args: string[];
  message: RegExp;
}

const USAGE_ERRORS: UsageCase[] = [
  {
    what: "a missing required option",
    args: ["backup", "restore", "x.tar.gz"],
    message: /required option '--home <dir>' not specified/,
  },
  { what: "an unknown option", args: ["status", "--bogus"], message: /unknown option '--bogus'/ },
  { what: "an unknown command", args: ["frobnicate"], message: /unknown command 'frobnicate'/ },
  { what: "a missing argument", args: ["kv", "get"], message: /missing required argument 'scope'/ },
  {
    what: "too many arguments",
    args: ["kv", "get", "a", "b", "c"],
    message: /too many arguments for 'get'/,
  },
  {
    what: "an option without its value",
    args: ["sessions", "list", "--limit"],
    message: /option '--limit <n>' argument missing/,
  },
  {
    what: "an invalid choice",
    args: ["memory", "topics", "--status", "done"],
    message: /--status must be one of open, paused, closed/,
  },
];

describe("usage errors exit 2", () => {
  for (const { what, args, message } of USAGE_ERRORS) {
    it(`${what}: exit 2, the message on stderr; with --json the JSON error`, () => {
      // The home comes from the environment: a --home after the args would change what they mean.
      const env = { AGENTSTATE_HOME: tempDir() };
      const plain = cli(args, env);
      expect(plain.status).toBe(2);
      expect(plain.stderr).toMatch(message);
      expect(plain.stdout).toBe("");

      // --json right after the command: at the end it would be the value of a `--limit` there.
      const json = cli([...args.slice(0, 2), "--json", ...args.slice(2)], env);
      expect(json.status).toBe(2);
      expect(json.stdout).toBe("");
      const { error } = JSON.parse(json.stderr) as { error: { code: string; message: string } };
      expect(error.code).toBe("E_INVALID_ARGUMENT");
      expect(error.message).toMatch(message);
      expect(error.message).not.toMatch(/^error:/);
    });
  }

  it("a group without its subcommand: exit 2 with its help on stderr", () => {
    const result = cli(["kv"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("Usage: agentstate kv");
  });

  it("--help, help and --version still exit 0 on stdout", () => {
    for (const args of [["--help"], ["help"], ["kv", "get", "--help"], ["--version"]]) {
      const result = cli(args);
      expect(result.status, args.join(" ")).toBe(0);
      expect(result.stdout).not.toBe("");
      expect(result.stderr).toBe("");
    }
  });
});

/** A home with these agents, each with a session, a transcript, a file, a topic and a fact. */
function homeWithAgents(agentIds: readonly string[]): {
  home: string;
  sessions: Map<string, string>;
} {
  const dir = tempDir();
  const home = openStateHome({ home: dir });
  const sessions = new Map<string, string>();
  try {
    for (const agentId of agentIds) {
      const key = `agent:${agentId}:main`;
      const { sessionId } = home.sessions.start(agentId, key);
      sessions.set(agentId, sessionId);
      const scope = { agentId, sessionId };
      home.transcripts.append(scope, {
        type: "message",
        message: { role: "user", content: [{ type: "text", text: `hello from ${agentId}` }] },
      });
      home.memory.createTopic(scope, { topicId: `${agentId}-topic`, title: `${agentId} topic` });
      home.memory.switchTopic(scope, `${agentId}-topic`);
      home.memory.upsertFact(agentId, {
        scope: "user",
        key: "owner",
        category: "background",
        value: `${agentId}-fact`,
        recallPolicy: "always",
      });
      new VfsStore(home.agent(agentId).db).namespace().writeFile("/who.txt", `I am ${agentId}`);
    }
  } finally {
    home.close();
  }
  return { home: dir, sessions };
}

/**
 * Every command that reads one agent (run without --agent), and what its output shows when it
 * read `agentId`, whose session is `sessionId`.
 */
function agentCommands(
  agentId: string,
  sessionId: string,
): Array<{ args: string[]; shows: string }> {
  return [
    { args: ["sessions", "list"], shows: `agent:${agentId}:main` },
    { args: ["sessions", "show", `agent:${agentId}:main`], shows: sessionId },
    { args: ["transcript", "show", sessionId], shows: `hello from ${agentId}` },
    { args: ["transcript", "export", sessionId], shows: `hello from ${agentId}` },
    { args: ["vfs", "ls"], shows: "who.txt" },
    { args: ["vfs", "cat", "/who.txt"], shows: `I am ${agentId}` },
    { args: ["vfs", "export", "--tar", "-"], shows: `I am ${agentId}` },
    { args: ["memory", "topics"], shows: `${agentId} topic` },
    { args: ["memory", "facts"], shows: `${agentId}-fact` },
    { args: ["memory", "recall", "--session", sessionId], shows: `${agentId}-fact` },
  ];
}

describe("--agent defaults to the home's only agent, else main", () => {
  it("a home with one agent: every agent command works without --agent", () => {
    const { home, sessions } = homeWithAgents(["solo"]);
    for (const { args, shows } of agentCommands("solo", sessions.get("solo") ?? "")) {
      const result = cli([...args, "--home", home]);
      expect(result.stderr, args.join(" ")).toBe("");
      expect(result.status, args.join(" ")).toBe(0);
      expect(result.stdout, args.join(" ")).toContain(shows);
    }
  });

  it("a home with main and other: every agent command reads main", () => {
    const { home, sessions } = homeWithAgents(["main", "other"]);
    for (const { args, shows } of agentCommands("main", sessions.get("main") ?? "")) {
      const result = cli([...args, "--home", home]);
      expect(result.status, args.join(" ")).toBe(0);
      expect(result.stdout, args.join(" ")).toContain(shows);
      expect(result.stdout, args.join(" ")).not.toContain("other");
    }
    // Given, --agent still chooses.
    const other = cli(["memory", "facts", "--agent", "other", "--home", home]);
    expect(other.stdout).toContain("other-fact");
  });

  it("a home with a and b: exit 2 naming both, as text and as JSON", () => {
    const { home, sessions } = homeWithAgents(["b", "a"]);
    for (const { args } of agentCommands("a", sessions.get("a") ?? "")) {
      const result = cli([...args, "--home", home]);
      expect(result.status, args.join(" ")).toBe(2);
      expect(result.stderr).toBe("agentstate: --agent is required: this home has agents a, b\n");
      expect(result.stdout).toBe("");
    }
    const json = cli(["sessions", "list", "--home", home, "--json"]);
    expect(json.status).toBe(2);
    expect(JSON.parse(json.stderr).error).toMatchObject({
      code: "E_INVALID_ARGUMENT",
      details: { agents: ["a", "b"] },
    });
  });

  it("a home without agents: exit 2 saying so", () => {
    const home = tempDir();
    expect(cli(["kv", "set", "prefs", "theme", '"dark"', "--home", home]).status).toBe(0);
    const result = cli(["memory", "topics", "--home", home]);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe("agentstate: --agent is required: this home has no agents\n");
  });

  it("an unknown --agent: exit 3 naming the agents there are", () => {
    const { home, sessions } = homeWithAgents(["a", "b"]);
    const commands = [
      ...agentCommands("a", sessions.get("a") ?? "").map(({ args }) => args),
      ["kv", "get", "prefs", "theme"],
    ];
    for (const args of commands) {
      const result = cli([...args, "--agent", "ghost", "--home", home]);
      expect(result.status, args.join(" ")).toBe(3);
      expect(result.stderr).toBe(
        `agentstate: no agent "ghost" in home ${home}; this home has agents a, b\n`,
      );
    }
    const json = cli(["vfs", "ls", "--agent", "ghost", "--home", home, "--json"]);
    expect(JSON.parse(json.stderr).error).toMatchObject({
      code: "E_NOT_FOUND",
      details: { agentId: "ghost", agents: ["a", "b"] },
    });
  });

  it("filters keep every agent as their default", () => {
    const { home } = homeWithAgents(["a", "b"]);
    const list = cli(["transcript", "list", "--home", home]);
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/^a\s/m);
    expect(list.stdout).toMatch(/^b\s/m);
    const search = cli(["transcript", "search", "hello", "--home", home, "--json"]);
    const agents = (JSON.parse(search.stdout) as Array<{ agentId: string }>).map((h) => h.agentId);
    expect(agents.sort()).toEqual(["a", "b"]);
    expect(cli(["cron", "list", "--home", home]).status).toBe(0);
    // kv without --agent is the global store, not a default agent.
    expect(cli(["kv", "set", "prefs", "theme", "1", "--home", home]).status).toBe(0);
    const global = openStateHome({ home, create: false });
    try {
      expect(global.kv.get("prefs", "theme")).toBe(1);
    } finally {
      global.close();
    }
  });
});

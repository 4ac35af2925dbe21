import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { latestSchemaVersion } from "../../src/db/schema.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

describe("agentstate --help", () => {
  const commands = [
    [],
    ["status"],
    ["demo"],
    ["kv"],
    ["kv", "get"],
    ["kv", "set"],
    ["kv", "list"],
    ["kv", "delete"],
  ];
  for (const command of commands) {
    it(`documents ${command.join(" ") || "the program"}`, () => {
      const result = cli([...command, "--help"]);
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/Usage: agentstate/);
      if (command.length > 0 && command[0] !== "kv") expect(result.stdout).toContain("--json");
    });
  }

  it("fails with a usage error on an unknown command", () => {
    const result = cli(["frobnicate"]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/unknown command/);
  });
});

describe("agentstate kv and status", () => {
  it("describes a home with two agents as JSON", () => {
    const home = tempDir();
    expect(cli(["kv", "set", "prefs", "theme", '"dark"', "--home", home]).status).toBe(0);
    expect(
      cli(["kv", "set", "notes", "n1", '{"a":1}', "--agent", "main", "--home", home]).status,
    ).toBe(0);
    expect(
      cli(["kv", "set", "notes", "n1", "[1,2]", "--agent", "research", "--home", home]).status,
    ).toBe(0);

    const result = cli(["status", "--home", home, "--json"]);
    expect(result.status).toBe(0);
    const status = JSON.parse(result.stdout);
    expect(status.home).toBe(home);
    expect(
      status.databases.map((d: { role: string; agentId: string | null }) => [d.role, d.agentId]),
    ).toEqual([
      ["global", null],
      ["agent", "main"],
      ["agent", "research"],
    ]);
    const [global, main] = status.databases;
    expect(global.path).toBe(join(home, "state", "state.sqlite"));
    expect(global.tables).toMatchObject({ kv: 1, agents: 2, agent_databases: 2 });
    expect(main.tables).toMatchObject({ kv: 1 });
    for (const db of status.databases) {
      expect(db).toMatchObject({ schemaVersion: latestSchemaVersion(db.role), quickCheck: "ok" });
      expect(db.bytes).toBeGreaterThan(0);
    }

    const text = cli(["status", "--home", home]);
    expect(text.stdout).toMatch(/agent\s+research/);
  });

  it("uses $AGENTSTATE_HOME when --home is absent", () => {
    const home = tempDir();
    expect(cli(["kv", "set", "s", "k", "42"], { AGENTSTATE_HOME: home }).status).toBe(0);
    const got = cli(["kv", "get", "s", "k", "--home", home]);
    expect(got.stdout.trim()).toBe("42");
  });

  it("lists, gets and deletes entries", () => {
    const home = tempDir();
    for (const key of ["b", "a", "c"]) cli(["kv", "set", "s", key, `"${key}"`, "--home", home]);
    const list = cli(["kv", "list", "s", "--json", "--home", home]);
    expect(JSON.parse(list.stdout).map((e: { key: string }) => e.key)).toEqual(["a", "b", "c"]);
    expect(cli(["kv", "delete", "s", "a", "--home", home]).status).toBe(0);
    const missing = cli(["kv", "get", "s", "a", "--home", home]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toContain("no kv entry s/a");
  });

  it("explains bad input with the value at fault", () => {
    const home = tempDir();
    const bad = cli(["kv", "set", "s", "k", "not json", "--home", home]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('"not json"');
    const badAgent = cli(["kv", "set", "s", "k", "1", "--agent", "../x", "--home", home]);
    expect(badAgent.status).toBe(2);
    expect(badAgent.stderr).toContain("agent id");
  });

  it("refuses a missing home without creating it", () => {
    const home = join(tempDir(), "nowhere");
    const result = cli(["status", "--home", home, "--json"]);
    expect(result.status).toBe(3);
    expect(JSON.parse(result.stderr).error).toMatchObject({ code: "E_NOT_FOUND" });
  });

  it("refuses a garbage global database and names it, leaving it untouched", () => {
    const home = tempDir();
    cli(["kv", "set", "s", "k", "1", "--home", home]);
    const path = join(home, "state", "state.sqlite");
    writeFileSync(path, "garbage ".repeat(100));
    const result = cli(["status", "--home", home]);
    expect(result.status).toBe(4);
    expect(result.stderr).toContain(path);
    expect(readFileSync(path, "utf8")).toBe("garbage ".repeat(100));
  });

  it("refuses an agent database from a newer release", () => {
    const home = tempDir();
    cli(["kv", "set", "s", "k", "1", "--agent", "main", "--home", home]);
    const path = join(home, "agents", "main", "agent", "agent.sqlite");
    const raw = openRawSqlite(path);
    raw.pragma("user_version = 99");
    raw.close();
    const result = cli(["status", "--home", home, "--json"]);
    expect(result.status).toBe(4);
    expect(JSON.parse(result.stderr).error).toMatchObject({
      code: "E_SCHEMA_TOO_NEW",
      details: { path, found: 99 },
    });
  });
});

describe("agentstate demo", () => {
  it("migrates a copy of the sample legacy home and shows what the databases answer", () => {
    const dir = tempDir();
    const result = cli(["demo", "--dir", dir, "--no-serve"]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain(join(dir, "home"));
    expect(result.stdout).toMatch(/transcript \(\.jsonl\)\s+3\s+\d+/);
    expect(result.stdout).toMatch(/credentials \(never imported\)\s+1/);
    expect(result.stdout).toMatch(/backup \S+\.tar\.gz — verified: ok/);
    expect(result.stdout).toMatch(/9 files imported \(39 records\), 0 with warnings, 0 failed/);
    expect(result.stdout).toMatch(/agent\s+main/);
    expect(result.stdout).toContain("Did I water the [basil] yesterday?");
    expect(result.stdout).toMatch(/Morning brief\s+cron 0 7 \* \* \* \(Europe\/Berlin\)/);
    expect(result.stdout).toMatch(
      /7\. A new conversation, run by the agent runtime \(3 turns, thread\)/,
    );
    expect(result.stdout).toContain("Four items: coffee, bread, tomatoes and oranges.");
    expect(result.stdout).toContain("## Topic: Weekend shopping list (open)");
    expect(result.stdout).toContain("secret kept at env:GROCERY_API_KEY");

    const jsonDir = tempDir();
    const json = JSON.parse(cli(["demo", "--dir", jsonDir, "--json"]).stdout);
    const kinds = json.legacySources.map((s: { kind: string }) => s.kind);
    expect(kinds).toEqual(
      expect.arrayContaining([
        "session-index",
        "transcript",
        "transcript-archive",
        "cron-jobs",
        "cron-runs",
        "subagent-runs",
        "config",
        "credentials",
        "lock",
      ]),
    );
    expect(json.doctor.status).toBe("succeeded");
    expect(json.backup.ok).toBe(true);
    expect(json.status.databases).toHaveLength(3);
    expect(json.search.length).toBeGreaterThan(0);
    // The demo's numbers are the database's: count the rows it claims.
    const home = openStateHome({ home: join(jsonDir, "home"), create: false });
    const main = home.agent("main", { create: false });
    expect(main.transcripts.read(json.session.sessionId)).toHaveLength(json.session.eventCount);
    expect(home.cron.list()).toHaveLength(json.cron.length);
    expect(json.conversation.turns.map((t: { status: string }) => t.status)).toEqual([
      "completed",
      "completed",
      "completed",
    ]);
    const live = main.transcripts.read(json.conversation.sessionId);
    expect(live.filter((e) => e.event.type === "message")).toHaveLength(13);
    const topic = main.memory.topics.get("weekend-shopping");
    expect(topic?.title).toBe("Weekend shopping list");
    expect(home.memory.members("main", "weekend-shopping").map((m) => m.eventId)).toEqual(
      live
        .filter((e) => (e.event.message as { role?: string } | undefined)?.role === "user")
        .map((e) => e.event.id),
    );
    expect(home.memory.recover("main", json.conversation.sessionKey)?.topic?.topicId).toBe(
      "weekend-shopping",
    );
    expect(main.vfs.namespace().readFile("/lists/shopping.md").toString()).toBe(
      `${json.conversation.scratch}\n`,
    );
    home.close();
  });
});

describe("agentstate demo, served", () => {
  it("ends by serving the dashboard of the migrated home until interrupted", async () => {
    const child = spawn(process.execPath, [CLI, "demo", "--dir", tempDir()], {
      env: { ...process.env, AGENTSTATE_HOME: "" },
    });
    let out = "";
    child.stdout.setEncoding("utf8");
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: string) => {
        out += chunk;
        const found = /8\. The dashboard of this home: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
        if (found) resolve(found[1] as string);
      });
      child.once("exit", (code) =>
        reject(new Error(`demo exited with ${code} before serving:\n${out}`)),
      );
    });
    const agents = (await (await fetch(`${url}api/agents`)).json()) as
      | { agents?: unknown[] }
      | unknown[];
    const list = Array.isArray(agents) ? agents : (agents.agents ?? []);
    expect(JSON.stringify(list)).toContain("main");
    const page = await fetch(url);
    expect(page.status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGINT");
    expect(await exited).toBe(0);
  }, 60_000);
});

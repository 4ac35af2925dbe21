import { existsSync, renameSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isStateError } from "./db/errors.js";
import { latestSchemaVersion } from "./db/schema.js";
import { openStateHome, resolveHomePath } from "./home.js";
import { modeOf, useTempDirs } from "./test-support/temp-dir.js";

const tempDir = useTempDirs();

describe("resolveHomePath", () => {
  it("prefers the explicit path, then $AGENTSTATE_HOME, then ~/.agentstate", () => {
    expect(resolveHomePath("/x/y", { AGENTSTATE_HOME: "/env" })).toBe("/x/y");
    expect(resolveHomePath(undefined, { AGENTSTATE_HOME: "/env" })).toBe("/env");
    expect(resolveHomePath(undefined, {})).toBe(join(homedir(), ".agentstate"));
    expect(resolveHomePath("~/state", {})).toBe(join(homedir(), "state"));
  });
});

describe("StateHome", () => {
  it("opens the global database and registers one database per agent", () => {
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    const main = home.agent("main");
    const research = home.agent("research");
    expect(home.agent("main")).toBe(main);
    main.kv.set("notes", "a", 1);
    research.kv.set("notes", "a", 2);

    const mainPath = join(dir, "agents", "main", "agent", "agent.sqlite");
    const researchPath = join(dir, "agents", "research", "agent", "agent.sqlite");
    expect(main.db.path).toBe(mainPath);
    expect(existsSync(join(dir, "state", "state.sqlite"))).toBe(true);
    expect(modeOf(statSync(join(dir, "agents", "main", "agent")))).toBe(0o700);

    const rows = home.db
      .prepare(
        "SELECT agent_id, path, schema_version, size_bytes FROM agent_databases ORDER BY agent_id",
      )
      .all();
    expect(rows).toEqual([
      {
        agent_id: "main",
        path: "agents/main/agent/agent.sqlite",
        schema_version: latestSchemaVersion("agent"),
        size_bytes: expect.any(Number),
      },
      {
        agent_id: "research",
        path: "agents/research/agent/agent.sqlite",
        schema_version: latestSchemaVersion("agent"),
        size_bytes: expect.any(Number),
      },
    ]);
    expect(home.listAgents().map((a) => [a.agentId, a.dbPath])).toEqual([
      ["main", mainPath],
      ["research", researchPath],
    ]);
    home.close();

    const again = openStateHome({ home: dir, create: false });
    expect(again.agent("research", { create: false }).kv.get("notes", "a")).toBe(2);
    expect(again.listAgents()).toHaveLength(2);
    again.close();
  });

  it("rejects agent ids that could escape the agents directory", () => {
    const home = openStateHome({ home: tempDir() });
    const bad = [
      "",
      "..",
      "../etc",
      "a/b",
      "a\\b",
      ".hidden",
      "a..b",
      "x".repeat(65),
      "a\0b",
      "tab\there",
      "ünï",
    ];
    for (const id of bad) {
      expect(() => home.agent(id), JSON.stringify(id)).toThrowError(
        expect.objectContaining({ code: "E_INVALID_ID" }),
      );
    }
    expect(home.db.prepare("SELECT count(*) AS n FROM agents").get()).toEqual({ n: 0 });
    for (const id of ["main", "wechat-assistant", "a1b2c3d4e5f6g7h8i9j0k1l2", "Agent_7.v2"]) {
      expect(home.agent(id).agentId).toBe(id);
    }
    home.close();
  });

  it("does not create what it was asked only to open", () => {
    const dir = tempDir();
    expect(() => openStateHome({ home: join(dir, "nothing"), create: false })).toThrowError(
      /no agentstate home/,
    );
    expect(existsSync(join(dir, "nothing"))).toBe(false);
    const home = openStateHome({ home: dir });
    expect(() => home.agent("ghost", { create: false })).toThrowError(/no agent "ghost"/);
    expect(home.hasAgent("ghost")).toBe(false);
    home.close();
  });

  it("refuses to silently recreate a registered agent whose database vanished", () => {
    const dir = tempDir();
    const home = openStateHome({ home: dir });
    home.agent("main");
    home.close();
    const path = join(dir, "agents", "main", "agent", "agent.sqlite");
    renameSync(path, `${path}.moved`);
    const again = openStateHome({ home: dir });
    try {
      again.agent("main");
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_NOT_FOUND")).toBe(true);
      expect((error as Error).message).toContain(path);
    }
    expect(existsSync(path)).toBe(false);
    again.close();
  });

  it("rejects unknown options by name", () => {
    expect(() => openStateHome({ home: tempDir(), crate: true } as never)).toThrow(
      /Unknown option for openStateHome: crate/,
    );
  });
});

describe("a read-only home", () => {
  it("reads what was written, registers nothing and refuses writes", () => {
    const path = tempDir();
    const writer = openStateHome({ home: path });
    writer.kv.set("s", "k", 1);
    writer.agent("main").kv.set("s", "k", 2);
    writer.close();
    const reader = openStateHome({ home: path, readonly: true });
    try {
      expect(reader.kv.get("s", "k")).toBe(1);
      expect(reader.agent("main").kv.get("s", "k")).toBe(2);
      expect(() => reader.agent("ghost")).toThrow(/no agent "ghost"/);
      expect(() => reader.kv.set("s", "k", 3)).toThrow();
      expect(reader.listAgents().map((a) => a.agentId)).toEqual(["main"]);
    } finally {
      reader.close();
    }
    expect(existsSync(join(path, "agents", "ghost"))).toBe(false);
  });

  it("does not create a missing home", () => {
    const path = join(tempDir(), "nowhere");
    expect(() => openStateHome({ home: path, readonly: true })).toThrow(/no agentstate home/);
    expect(existsSync(path)).toBe(false);
  });
});

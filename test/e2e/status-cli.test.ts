// status and doctor as a newcomer meets them: what a home is doing, and where a legacy home is.
import {
  appendFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { generateLegacyHome } from "../fixtures/generate-legacy-home.mjs";
import { PROJECT_ROOT, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
const SAMPLE = join(PROJECT_ROOT, "examples", "legacy-home");
beforeAll(requireBuild);

interface StatusJson {
  agents: Array<{ agentId: string; sessions: number; lastActivityAt: number | null }>;
  lastBackup: { id: string; status: string; archive: string } | null;
  lastMigration: { id: string; status: string } | null;
}

/** The latest session or entry change, read with plain SQL: the oracle for "last activity". */
function lastChange(home: string, agentId: string): { sessions: number; at: number } {
  const db = openRawSqlite(join(home, "agents", agentId, "agent", "agent.sqlite"), {
    readonly: true,
  });
  try {
    const sessions = db.prepare("SELECT updated_at FROM sessions").pluck().all() as number[];
    const entries = db.prepare("SELECT updated_at FROM session_entries").pluck().all() as number[];
    return { sessions: sessions.length, at: Math.max(...sessions, ...entries) };
  } finally {
    db.close();
  }
}

/** Every regular file's size under `dir`, summed: the oracle for the storage figures. */
function walkBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sum + walkBytes(path);
    return entry.isFile() ? sum + lstatSync(path).size : sum;
  }, 0);
}

interface StorageJson {
  homeBytes: number;
  budget: { maxDiskBytes: number; highWaterBytes: number; overBytes: number } | null;
  agents: Array<{
    agentId: string;
    hotBytes: number;
    coldBytes: number;
    totalBytes: number;
    budget: { maxDiskBytes: number; overBytes: number } | null;
  }>;
}

describe("agentstate status", () => {
  it("shows hot and cold bytes per agent and every byte of the home, against the budget", () => {
    const home = join(tempDir(), "home");
    // Kept open (checkpoints inline: no thread resizes a -wal meanwhile) so that the -wal and -shm
    // files the status command sees are still there, the same, for the walk that checks it.
    const state = openStateHome({ home, checkpoints: "inline" });
    for (const agentId of ["main", "ops"]) {
      for (const sessionId of ["a", "b"]) {
        for (let i = 0; i < 40; i++) {
          state.agent(agentId).transcripts.append(sessionId, {
            type: "message",
            message: { role: "user", content: `${agentId} ${sessionId} walrus ${i} `.repeat(20) },
          });
        }
      }
    }
    state.agent("main").cold.move("a");
    writeFileSync(
      join(home, "agentstate.json"),
      JSON.stringify({
        maintenance: { maxDiskBytes: 4096, agents: { ops: { maxDiskBytes: 1_000_000_000 } } },
      }),
    );
    const result = cli(["status", "--home", home, "--json"]);
    expect(result.status, result.stderr).toBe(0);
    const { storage } = JSON.parse(result.stdout) as { storage: StorageJson };
    const homeBytes = walkBytes(home);
    expect(storage.homeBytes).toBe(homeBytes);
    expect(storage.budget).toEqual({
      maxDiskBytes: 4096,
      highWaterBytes: 3276,
      overBytes: homeBytes - 4096,
    });
    for (const agent of storage.agents) {
      const dir = join(home, "agents", agent.agentId, "agent");
      const db = join(dir, "agent.sqlite");
      const hot = [db, `${db}-wal`, `${db}-shm`].reduce(
        (sum, path) => sum + (existsSync(path) ? lstatSync(path).size : 0),
        0,
      );
      expect(agent.hotBytes).toBe(hot);
      expect(agent.coldBytes).toBe(walkBytes(join(dir, "cold")));
      expect(agent.totalBytes).toBe(walkBytes(join(home, "agents", agent.agentId)));
    }
    const byId = Object.fromEntries(storage.agents.map((a) => [a.agentId, a]));
    expect(byId.main?.coldBytes).toBeGreaterThan(0);
    expect(byId.ops?.coldBytes).toBe(0);
    expect(byId.main?.budget).toBeNull();
    expect(byId.ops?.budget?.maxDiskBytes).toBe(1_000_000_000);
    state.close();

    const text = cli(["status", "--home", home]).stdout;
    expect(text).toMatch(/^AGENT\s+HOT\s+COLD\s+TOTAL$/m);
    expect(text).toMatch(/^disk: .* of 4\.0 KiB budget, .* over \(every file of the home counts/m);
  });

  it("shows each agent's last activity, the last backup and the last migration", () => {
    const home = join(tempDir(), "home");
    generateLegacyHome(home, { agents: 2, sessions: 3, events: 4 });
    expect(cli(["doctor", "--fix", "--home", home]).status).toBe(0);
    const result = cli(["status", "--home", home, "--json"]);
    expect(result.status, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout) as StatusJson;
    const agentIds = readdirSync(join(home, "agents")).sort();
    expect(status.agents.map((a) => a.agentId)).toEqual(agentIds);
    for (const agent of status.agents) {
      const oracle = lastChange(home, agent.agentId);
      expect(agent).toEqual({
        agentId: agent.agentId,
        sessions: oracle.sessions,
        lastActivityAt: oracle.at,
      });
    }
    const [backup] = JSON.parse(cli(["backup", "list", "--home", home, "--json"]).stdout) as Array<{
      id: string;
    }>;
    expect(status.lastBackup?.id).toBe(backup?.id);
    expect(status.lastMigration?.status).toBe("succeeded");

    const text = cli(["status", "--home", home]).stdout;
    expect(text).toMatch(/^AGENT\s+SESSIONS\s+LAST ACTIVITY$/m);
    expect(text).toMatch(/^last backup: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d succeeded \(backups\//m);
    expect(text).toMatch(/^last migration: .* succeeded$/m);
  });

  it("says when a migration is partial", () => {
    const home = join(tempDir(), "home");
    cpSync(SAMPLE, home, { recursive: true });
    const sessions = join(home, "agents", "main", "sessions");
    const transcript = readdirSync(sessions).find((name) => name.endsWith(".jsonl")) as string;
    appendFileSync(join(sessions, transcript), "{ not json\n");
    expect(cli(["doctor", "--fix", "--home", home]).status).toBe(1);
    const text = cli(["status", "--home", home]).stdout;
    expect(text).toMatch(/^last migration: .* partial: some legacy sources are still left/m);
    expect(cli(["backup", "list", "--home", home]).status).toBe(0);
  });

  it("on a legacy home not migrated yet, or one level above it, points at doctor", () => {
    const parent = join(tempDir(), "parent");
    const legacy = join(parent, ".openclaw");
    cpSync(SAMPLE, legacy, { recursive: true });
    const onLegacy = cli(["status", "--home", legacy]);
    expect(onLegacy.status).toBe(3);
    expect(onLegacy.stderr).toContain(`run \`agentstate doctor --home ${legacy}\``);
    const above = cli(["status", "--home", parent]);
    expect(above.status).toBe(3);
    expect(above.stderr).toContain(`did you mean --home ${legacy}?`);
    const plan = cli(["doctor", "--home", parent]);
    expect(plan.status).toBe(0);
    expect(plan.stdout).toContain(`did you mean --home ${legacy}?`);
    expect(existsSync(join(parent, "state"))).toBe(false);
  });

  it("doctor with no home says where legacy homes usually are, and whether one is there", () => {
    const userHome = join(tempDir(), "user");
    mkdirSync(userHome);
    const none = cli(["doctor"], { HOME: userHome });
    expect(none.status).toBe(3);
    expect(none.stderr).toMatch(/usually live in ~\/\.openclaw.*none found in/);
    cpSync(SAMPLE, join(userHome, ".openclaw"), { recursive: true });
    const found = cli(["doctor"], { HOME: userHome });
    expect(found.status).toBe(3);
    expect(found.stderr).toContain(`legacy state found at ${join(userHome, ".openclaw")}`);
  });

  it("kv set never creates a home inside directories that do not exist", () => {
    const nested = join(tempDir(), "typo", "deeper", "home");
    const result = cli(["kv", "set", "prefs", "theme", '"dark"', "--home", nested]);
    expect(result.status).toBe(3);
    expect(result.stderr).toMatch(/does not exist either/);
    expect(existsSync(join(nested, "..", ".."))).toBe(false);
    const fresh = join(tempDir(), "fresh");
    expect(cli(["kv", "set", "prefs", "theme", '"dark"', "--home", fresh]).status).toBe(0);
  });
});

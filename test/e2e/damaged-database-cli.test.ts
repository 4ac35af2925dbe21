import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { pagesOf, rowidsOnLeafPage } from "../../src/doctor/test-support/btree-pages.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

/** A home whose agent database has one transcript leaf page overwritten with garbage. */
function damagedHome(): { home: string; dbPath: string; sessionId: string; lost: number } {
  const home = tempDir();
  const state = openStateHome({ home });
  const { sessionId } = state.sessions.start("main", "agent:main:main");
  for (let i = 0; i < 400; i++) {
    const text = `note ${i}: water the basil ${"and the thyme ".repeat(i % 9)}`;
    const message = { role: "user", content: [{ type: "text", text }] };
    state.transcripts.append({ agentId: "main", sessionId }, { type: "message", message });
  }
  const dbPath = state.agent("main").db.path;
  state.close();
  const { leaves } = pagesOf(dbPath, "transcript_events");
  const page = leaves[Math.floor(leaves.length / 2)] as number;
  const file = readFileSync(dbPath);
  const lost = rowidsOnLeafPage(file, page).length;
  randomBytes(4096).copy(file, (page - 1) * 4096);
  writeFileSync(dbPath, file);
  return { home, dbPath, sessionId, lost };
}

describe("agentstate doctor on a damaged database", () => {
  it("reports it, quarantines it, and --fix salvages it without deleting the damaged file", () => {
    const { home, dbPath, sessionId, lost } = damagedHome();
    const damagedBytes = readFileSync(dbPath);
    const show = ["transcript", "show", sessionId, "--agent", "main", "--home", home];

    const report = cli(["doctor", "--home", home]);
    expect(report.status).toBe(4);
    expect(report.stdout).toContain(dbPath);
    expect(report.stdout).toContain("agentstate doctor --fix");

    const refused = cli(show);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toContain("agentstate doctor --fix");
    expect(cli(["kv", "set", "s", "k", "1", "--home", home]).status).toBe(0); // the global DB is whole

    const fixed = cli(["doctor", "--fix", "--json", "--home", home]);
    expect(fixed.stderr).toBe("");
    expect(fixed.status).toBe(0);
    const salvaged = JSON.parse(fixed.stdout).salvaged as Array<{
      path: string;
      keptAt: string;
      tables: Array<{ table: string; recovered: number; lost: number | "unknown" }>;
    }>;
    expect(salvaged.map((s) => s.path)).toEqual([dbPath]);
    expect(readFileSync(salvaged[0]?.keptAt as string).equals(damagedBytes)).toBe(true);
    const events = salvaged[0]?.tables.find((t) => t.table === "transcript_events");
    expect(events?.recovered).toBe(401 - lost);

    const shown = cli(show);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toContain("note 399: water the basil");
    expect(existsSync(`${dbPath}.damaged`)).toBe(false);
    expect(cli(["doctor", "--home", home]).status).toBe(0);
  });
});

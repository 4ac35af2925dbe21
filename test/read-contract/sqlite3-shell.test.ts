import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import type { Schema6Fixture } from "../upgrade/rich-agent.js";
import { agentDb, freshHome, upgradedHome } from "./homes.js";

/** Debian's shell (3.40 on Debian 12): `npm test` installs it first (scripts/ensure-sqlite3.mjs). */
const SHELL = "/usr/bin/sqlite3";
const tempDir = useTempDirs();

function shell(path: string, sql: string): string {
  expect(existsSync(SHELL), `${SHELL} is missing: run node scripts/ensure-sqlite3.mjs`).toBe(true);
  const result = spawnSync(SHELL, ["-bail", path, sql], { encoding: "utf8" });
  expect(result.stderr).toBe("");
  expect(result.status).toBe(0);
  return result.stdout;
}

/** `session_id|seq` of the events whose message text holds `word`, from the JSONL written. */
function eventsSaying(fixture: Schema6Fixture, word: string): string[] {
  const hits: string[] = [];
  for (const [sessionId, text] of fixture.lines) {
    text.split("\n").forEach((line, i) => {
      const event = line === "" ? undefined : JSON.parse(line);
      const content = JSON.stringify(event?.message?.content ?? "");
      if (content.toLowerCase().includes(word)) hits.push(`${sessionId}|${i + 1}`);
    });
  }
  return hits.sort();
}

function homes(): { label: string; path: string; fixture: Schema6Fixture }[] {
  const upgraded = tempDir();
  const fresh = tempDir();
  const fixture = upgradedHome(upgraded);
  freshHome(fresh, fixture);
  return [
    { label: "upgraded", path: agentDb(upgraded), fixture },
    { label: "fresh", path: agentDb(fresh), fixture },
  ];
}

describe("an agent database read with the stock sqlite3 shell", () => {
  it("answers the views, a word search, a CJK bigram search and the integrity check", () => {
    expect(shell(":memory:", "SELECT sqlite_version() >= '3.40.0'")).toBe("1\n");
    for (const { label, path, fixture } of homes()) {
      const sessions = shell(path, "SELECT count(*) FROM agentstate_sessions_v1");
      expect(sessions, label).toBe(`${fixture.lines.size}\n`);
      const beta = shell(
        path,
        "SELECT seq, event_id, event_type FROM agentstate_events_v1 WHERE session_id = 'beta-session' ORDER BY seq",
      );
      expect(beta, label).toBe(
        "1|beta-session|session\n2|b1|message\n3|b2|message\n4|b3|message\n",
      );
      const search = (match: string) =>
        shell(
          path,
          `SELECT session_id || '|' || seq FROM agentstate_search_v1 WHERE text MATCH '${match}' ORDER BY 1`,
        );
      expect(search("kubernetes"), label).toBe(
        eventsSaying(fixture, "kubernetes")
          .map((hit) => `${hit}\n`)
          .join(""),
      );
      const bigram = eventsSaying(fixture, "支持");
      expect(bigram, label).toContain("beta-session|2");
      expect(search('"支持"'), label).toBe(bigram.map((hit) => `${hit}\n`).join(""));
      expect(shell(path, "PRAGMA integrity_check"), label).toBe("ok\n");
    }
  });
});

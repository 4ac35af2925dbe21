import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { type DoctorReport, runDoctorFix } from "./fix.js";
import { headerLine as header, messageLine as line } from "./test-support/legacy-lines.js";

const tempDir = useTempDirs();
const noBackup = async () => "(test)";
const SESSIONS = "agents/main/sessions";

function makeHome(files: Record<string, string | Buffer>): string {
  const dir = join(tempDir(), "home");
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  return dir;
}

function sourceOf(report: DoctorReport, path: string) {
  const found = report.sources.find((s) => s.path === path);
  if (!found) throw new Error(`no source ${path} in report`);
  return found;
}

function events(dir: string, sessionId: string): number {
  const home = openStateHome({ home: dir, create: false });
  try {
    return home.transcripts.read({ agentId: "main", sessionId }).length;
  } finally {
    home.close();
  }
}

describe("doctor --fix on hostile input", () => {
  it("reports broken lines by file:line, imports the rest and keeps those files", async () => {
    const big = `${line("b1", null, "x".repeat(10))}\n{"type":"message","id":"b2","text":"${"y".repeat(33 * 1024 * 1024)}"}\n${line("b3", "b1", "after")}\n`;
    const dir = makeHome({
      [`${SESSIONS}/trunc.jsonl`]: `${header("trunc")}\n${line("a1", null, "one")}\n{"type":"message","id":"a2","par`,
      [`${SESSIONS}/crlf.jsonl`]: `\uFEFF${header("crlf")}\r\n${line("c1", null, "windows")}\r\n`,
      [`${SESSIONS}/utf8.jsonl`]: Buffer.concat([
        Buffer.from(`${header("utf8")}\n`),
        Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a]),
        Buffer.from(`${line("u1", null, "ok")}\n`),
      ]),
      [`${SESSIONS}/dup.jsonl`]: `${header("dup")}\n${line("d1", null, "first")}\n${line("d1", null, "second, different")}\n${line("d2", "d1", "fine")}\n`,
      [`${SESSIONS}/huge.jsonl`]: big,
      [`${SESSIONS}/empty.jsonl`]: "",
    });
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    expect(report.status).toBe("partial");
    const trunc = sourceOf(report, `${SESSIONS}/trunc.jsonl`);
    expect(trunc).toMatchObject({ status: "warning", removed: false, records: 2 });
    expect(trunc.problems).toEqual([
      expect.objectContaining({ line: 3, reason: expect.stringMatching(/invalid JSON/) }),
    ]);
    expect(sourceOf(report, `${SESSIONS}/crlf.jsonl`)).toMatchObject({
      status: "imported",
      records: 2,
    });
    expect(sourceOf(report, `${SESSIONS}/utf8.jsonl`).problems).toEqual([
      expect.objectContaining({ line: 2, reason: "invalid UTF-8" }),
    ]);
    const dup = sourceOf(report, `${SESSIONS}/dup.jsonl`);
    expect(dup.problems).toEqual([
      expect.objectContaining({ line: 3, reason: expect.stringMatching(/d1/) }),
    ]);
    expect(events(dir, "dup")).toBe(3);
    const huge = sourceOf(report, `${SESSIONS}/huge.jsonl`);
    expect(huge.problems).toEqual([
      expect.objectContaining({ line: 2, reason: expect.stringMatching(/over \d+ bytes/) }),
    ]);
    expect(events(dir, "huge")).toBe(2);
    expect(sourceOf(report, `${SESSIONS}/empty.jsonl`)).toMatchObject({
      status: "imported",
      records: 0,
    });
    for (const kept of ["trunc", "utf8", "dup", "huge"])
      expect(existsSync(join(dir, SESSIONS, `${kept}.jsonl`))).toBe(true);
    expect(existsSync(join(dir, SESSIONS, "crlf.jsonl"))).toBe(false);
  });

  it("keeps sound session index entries and names the keys of broken ones", async () => {
    const index = {
      "agent:main:main": { sessionId: "s1", updatedAt: 5 },
      main: { sessionId: "old", updatedAt: 1 },
      "agent:main:bad": [1, 2],
      "agent:main:num": 7,
      "agent:main:odd": { sessionId: 42, updatedAt: "soon" },
    };
    const dir = makeHome({
      [`${SESSIONS}/sessions.json`]: JSON.stringify(index),
      "agents/other/sessions/sessions.json": "[1,2,3]",
      "agents/third/sessions/sessions.json": "",
    });
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    const main = sourceOf(report, `${SESSIONS}/sessions.json`);
    expect(main.status).toBe("warning");
    expect(main.problems.map((p) => p.key).sort()).toEqual(["agent:main:bad", "agent:main:num"]);
    expect(sourceOf(report, "agents/other/sessions/sessions.json")).toMatchObject({
      status: "refused",
      error: expect.stringMatching(/not an object/),
    });
    expect(sourceOf(report, "agents/third/sessions/sessions.json")).toMatchObject({
      status: "imported",
      records: 0,
    });
    const home = openStateHome({ home: dir, create: false });
    const agent = home.agent("main", { create: false });
    expect(agent.sessions.get("agent:main:main")?.entry.sessionId).toBe("s1");
    expect(agent.sessions.get("agent:main:odd")?.entry).toEqual({
      sessionId: 42,
      updatedAt: "soon",
    });
    expect(
      agent.sessions
        .list()
        .entries.map((e) => e.sessionKey)
        .sort(),
    ).toEqual(["agent:main:main", "agent:main:odd"]);
    home.close();
  });

  it("refuses a symlinked source and never reads or changes its target", async () => {
    const outside = join(tempDir(), "outside.jsonl");
    writeFileSync(outside, `${header("x")}\n${line("o1", null, "secret outside the home")}\n`);
    const dir = makeHome({ [`${SESSIONS}/real.jsonl`]: `${header("real")}\n` });
    symlinkSync(outside, join(dir, SESSIONS, "linked.jsonl"));
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    expect(sourceOf(report, `${SESSIONS}/linked.jsonl`)).toMatchObject({
      status: "refused",
      error: expect.stringMatching(/symbolic link/),
    });
    expect(readFileSync(outside, "utf8")).toContain("secret outside the home");
    const home = openStateHome({ home: dir, create: false });
    expect(home.transcripts.search("secret")).toEqual([]);
    home.close();
  });

  it("reports an unreadable file and imports the others", async () => {
    const dir = makeHome({
      [`${SESSIONS}/locked.jsonl`]: `${header("locked")}\n`,
      [`${SESSIONS}/open.jsonl`]: `${header("open")}\n`,
    });
    chmodSync(join(dir, SESSIONS, "locked.jsonl"), 0o000);
    const report = await runDoctorFix({ home: dir, backup: noBackup });
    expect(sourceOf(report, `${SESSIONS}/open.jsonl`).status).toBe("imported");
    const locked = sourceOf(report, `${SESSIONS}/locked.jsonl`);
    // root reads anything: only an unprivileged run can see the refusal.
    if (process.getuid?.() !== 0)
      expect(locked).toMatchObject({
        status: "refused",
        error: expect.stringMatching(/EACCES|permission/i),
      });
    else expect(locked.status).toBe("imported");
  });
});

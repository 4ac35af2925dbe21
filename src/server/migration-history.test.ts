import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runDoctorFix } from "../doctor/fix.js";
import { headerLine, messageLine } from "../doctor/test-support/legacy-lines.js";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { createApp } from "./app.js";

const tempDir = useTempDirs();
const ORIGIN = "http://127.0.0.1:4711";
const SESSION = "3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7";
const PATH = `agents/main/sessions/${SESSION}.jsonl`;
const noBackup = async () => "(test: no backup)";

/** A legacy home whose transcript has a broken line 2 and a line of invalid UTF-8 at 4. */
function legacyHome(): string {
  const home = join(tempDir(), "home");
  mkdirSync(join(home, "agents/main/sessions"), { recursive: true });
  const lines = [
    Buffer.from(headerLine(SESSION)),
    Buffer.from("{not json"),
    Buffer.from(messageLine("b1", null, "one")),
    Buffer.from([0x7b, 0xc0, 0xaf, 0x7d]),
    Buffer.from(messageLine("b2", "b1", "two")),
  ];
  writeFileSync(join(home, PATH), Buffer.concat(lines.flatMap((l) => [l, Buffer.from("\n")])));
  return home;
}

describe("GET /api/migrations/:runId", () => {
  it("returns each problem of every run by file and line, and the lines a run quarantined", async () => {
    const homeDir = legacyHome();
    const file = readFileSync(join(homeDir, PATH));
    const fileLines = file.toString("latin1").split("\n");
    const partial = await runDoctorFix({ home: homeDir, backup: noBackup });
    const finished = await runDoctorFix({ home: homeDir, backup: noBackup, quarantine: true });
    expect([partial.status, finished.status]).toEqual(["partial", "succeeded"]);

    const home = openStateHome({ home: homeDir, create: false });
    const server = createApp({ home });
    try {
      // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are asserted field by field
      const get = async (path: string): Promise<any> =>
        (await server.app.request(`${ORIGIN}/api${path}`)).json();
      for (const run of [partial, finished]) {
        const body = await get(`/migrations/${run.runId}`);
        expect(
          body.problems.map((p: { path: string; line: number }) => `${p.path}:${p.line}`),
        ).toEqual([`${PATH}:2`, `${PATH}:4`]);
        expect(body.problems[0].reason).toMatch(/invalid JSON/);
        expect(body.problems[1].reason).toBe("invalid UTF-8");
        expect(body.problems.every((p: { quarantined: boolean }) => p.quarantined)).toBe(
          run === finished,
        );
      }
      expect((await get(`/migrations/${partial.runId}`)).quarantined).toEqual([]);
      const { quarantined } = await get(`/migrations/${finished.runId}`);
      expect(quarantined.map((q: { line: number }) => q.line)).toEqual([2, 4]);
      for (const q of quarantined) {
        expect(q.path).toBe(PATH);
        const expected = Buffer.from(fileLines[q.line - 1] as string, "latin1");
        expect(Buffer.from(q.base64, "base64").equals(expected)).toBe(true);
        expect(q.bytes).toBe(expected.length);
      }
      const runs = (await get("/migrations")).runs;
      const byId = new Map(runs.map((r: { id: string }) => [r.id, r]));
      expect(byId.get(finished.runId)).toMatchObject({ quarantined: 2, problemCount: 2 });
      expect(byId.get(partial.runId)).toMatchObject({ quarantined: 0, problemCount: 2 });
      expect((await get("/quarantine")).lines).toHaveLength(2);
    } finally {
      server.close();
      home.close();
    }
  });
});

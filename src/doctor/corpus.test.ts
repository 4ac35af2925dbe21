import { cpSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { CORPUS_DIR, corpusHomes } from "../test-support/corpus.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";
import { parseTranscriptFileName } from "./sources/transcript-source.js";

const tempDir = useTempDirs();
const homes = corpusHomes();

describe.skipIf(homes.length === 0)("doctor --fix on every real legacy home in the corpus", () => {
  for (const source of homes) {
    const name = relative(CORPUS_DIR, source);
    it(`imports ${name} (or refuses with a precise reason) and exports transcripts back`, async () => {
      const home = join(tempDir(), "home");
      cpSync(source, home, { recursive: true });
      const report = await runDoctorFix({ home, keepSources: true, backup: async () => "(test)" });
      for (const s of report.sources) {
        if (s.status === "failed" || s.status === "refused" || s.status === "warning") {
          expect(s.error, `${s.path} ${s.status} without a reason`).toMatch(/\S/);
        }
        if (s.status === "warning") expect(s.problems.length, s.path).toBeGreaterThan(0);
      }
      const ledgers = {
        "cron-jobs": "cron_jobs",
        "cron-runs": "cron_run_logs",
        "subagent-runs": "subagent_runs",
      };
      const counted = Object.entries(ledgers).map(([kind, table]) => {
        const sources = report.sources.filter((s) => s.kind === kind);
        expect(
          sources.every((s) => s.status === "imported"),
          JSON.stringify(sources),
        ).toBe(true);
        return { table, records: sources.reduce((sum, s) => sum + s.records, 0) };
      });
      const global = openStateHome({ home, create: false });
      for (const { table, records } of counted) {
        const rows = global.db.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).get();
        expect(rows?.n, `${name}: ${table}`).toBe(records);
      }
      global.close();
      const transcripts = report.sources.filter(
        (s) => s.kind === "transcript" || s.kind === "transcript-archive",
      );
      expect(
        transcripts.every((s) => s.status === "imported"),
        JSON.stringify(transcripts.filter((s) => s.status !== "imported")),
      ).toBe(true);
      const bySession = new Map<string, typeof transcripts>();
      for (const t of transcripts) {
        const key = `${t.agentId}/${parseTranscriptFileName(t.path.split("/").at(-1) ?? "")?.sessionId}`;
        bySession.set(key, [...(bySession.get(key) ?? []), t]);
      }
      if (transcripts.length === 0) return;
      const state = openStateHome({ home, create: false });
      for (const [key, files] of bySession) {
        const [agentId, sessionId] = key.split("/") as [string, string];
        const text = readFileSync(join(home, (files[0] as { path: string }).path), "utf8");
        if (files.length !== 1 || text === "") continue;
        const exported = [...state.transcripts.exportJsonl({ agentId, sessionId })].join("");
        expect(exported, files[0]?.path).toBe(text);
      }
      state.close();
    });
  }
});

import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../src/test-support/temp-dir.js";

const SCRIPT = fileURLToPath(new URL("./check-bans.mjs", import.meta.url));
const tempDir = useTempDirs();

function project(files: Record<string, string>): string {
  const root = tempDir();
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function check(root: string) {
  return spawnSync(process.execPath, [SCRIPT, root], { encoding: "utf8" });
}

describe("check:bans", () => {
  it("passes the project's own source", () => {
    expect(check(fileURLToPath(new URL("..", import.meta.url))).status).toBe(0);
  });

  it("fails runtime code that writes a legacy store, naming file and line", () => {
    const root = project({
      "src/stores/bad.ts":
        // biome-ignore lint/suspicious/noTemplateCurlyInString: this is fixture source code
        'import { writeFileSync } from "node:fs";\n\nexport function save(dir: string) {\n  writeFileSync(`${dir}/sessions.json`, "{}");\n}\n',
      "src/cron/bad.ts":
        'import { appendFileSync } from "node:fs";\nappendFileSync("cron/runs/" + id + ".jsonl", line);\n',
    });
    const result = check(root);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("src/stores/bad.ts:4");
    expect(result.stderr).toContain("src/cron/bad.ts:2");
  });

  it("allows the doctor, tests and an explicit, justified export", () => {
    const root = project({
      "src/doctor/import.ts":
        'import { renameSync } from "node:fs";\nrenameSync("sessions.json", "x");\n',
      "src/stores/a.test.ts":
        'import { writeFileSync } from "node:fs";\nwriteFileSync("t.jsonl", "");\n',
      "src/export/x.ts":
        'import { writeFileSync } from "node:fs";\n// check-bans: allow explicit export requested by the user\nwriteFileSync(out + ".jsonl", text);\n',
      "src/stores/reads.ts": 'const name = "sessions.json"; // mentioned, never written\n',
    });
    expect(check(root).status).toBe(0);
  });
});

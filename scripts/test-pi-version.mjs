#!/usr/bin/env node
// Runs the agentstate/pi tests (src/pi/) against another release of @mariozechner/pi-coding-agent,
// installed into a temporary directory (the project's own node_modules are left alone).
//
// Usage: node scripts/test-pi-version.mjs 0.65.0      (npm run test:pi-oldest)
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const version = process.argv[2];
if (!version) {
  process.stderr.write("Usage: node scripts/test-pi-version.mjs <version>\n");
  process.exit(2);
}
const root = fileURLToPath(new URL("../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), `agentstate-pi-${version}-`));
const config = join(root, `vitest.pi-${process.pid}.tmp.mjs`);

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: "inherit" });
  return result.status ?? 1;
}

let status = 1;
try {
  writeFileSync(join(dir, "package.json"), '{"name":"pi-version-under-test","private":true}\n');
  const install = ["install", "--ignore-scripts", "--no-audit", "--no-fund"];
  status = run("npm", [...install, `@mariozechner/pi-coding-agent@${version}`], dir);
  if (status === 0) {
    const entry = join(dir, "node_modules/@mariozechner/pi-coding-agent/dist/index.js");
    writeFileSync(
      config,
      `import { defineConfig } from "vitest/config";
export default defineConfig({
  resolve: { alias: { "@mariozechner/pi-coding-agent": ${JSON.stringify(entry)} } },
  test: { include: ["src/pi/**/*.test.ts"], testTimeout: 60_000, pool: "forks" },
});
`,
    );
    status = run(join(root, "node_modules/.bin/vitest"), ["run", "--config", config], root);
  }
} finally {
  rmSync(config, { force: true });
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);

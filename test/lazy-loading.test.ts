// `import("agentstate")` runs on every gateway start: a package that only some calls need loads on
// the first of them (src/lazy-require.ts, src/entry-points.ts), not with the library. Checked on
// the build, in a fresh process, over both ways a package can load: the ESM resolutions
// (record-imports) and the CommonJS cache (lazyRequire).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./support/built.js";

const run = promisify(execFile);
const RECORD = new URL("./fixtures/record-imports.mjs", import.meta.url).href;
const DIST = new URL("../dist/", import.meta.url).href;

/** The dependencies no gateway's open, append, search and read needs. */
const ON_DEMAND = [
  "zod",
  "hono",
  "@hono/node-server",
  "tar",
  "json5",
  "croner",
  "pg",
  "aws4fetch",
  "cli-progress",
  "commander",
  "uplot",
  "@mariozechner/pi-coding-agent",
];

let dir: string;
beforeAll(requireBuild);
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The packages (by name under node_modules) a fresh process loaded while running `body`. */
async function packagesLoadedBy(body: string): Promise<string[]> {
  const log = join(dir, "imports.log");
  const script = `
    import { createRequire } from "node:module";
    import { appendFileSync } from "node:fs";
    const agentstate = await import(${JSON.stringify(`${DIST}index.js`)});
    ${body}
    const cache = Object.keys(createRequire(import.meta.url).cache);
    appendFileSync(process.env.IMPORT_LOG, cache.map((path) => path + "\\n").join(""));
  `;
  await run(process.execPath, ["--import", RECORD, "--input-type=module", "-e", script], {
    env: { ...process.env, IMPORT_LOG: log, HOME_DIR: join(dir, "home") },
  });
  const names = new Set<string>();
  for (const entry of readFileSync(log, "utf8").split("\n")) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(decodeURIComponent(entry));
    if (match?.[1]) names.add(match[1]);
  }
  return [...names].sort();
}

describe("what import('agentstate') loads", () => {
  it("none of the on-demand packages, through an open, an append, a search and a read", async () => {
    dir = mkdtempSync(join(tmpdir(), "agentstate-lazy-"));
    const loaded = await packagesLoadedBy(`
      const home = agentstate.openStateHome({ home: process.env.HOME_DIR });
      const agent = home.agent("main");
      agent.transcripts.append("s1", { type: "message", message: { role: "user", content: "basil" } });
      if (agent.search.search("basil").length !== 1) throw new Error("search found nothing");
      home.kv.set("gateway", "k", "v");
      if (home.kv.get("gateway", "k") !== "v") throw new Error("kv lost its value");
      home.close();
    `);
    expect(loaded.filter((name) => ON_DEMAND.includes(name))).toEqual([]);
  });

  // Also the proof that the check sees a package loaded through lazyRequire (CommonJS).
  it("zod once a home's agentstate.json is read, and it still names the key at fault", async () => {
    dir = mkdtempSync(join(tmpdir(), "agentstate-lazy-"));
    const loaded = await packagesLoadedBy(`
      const { mkdirSync, writeFileSync } = await import("node:fs");
      mkdirSync(process.env.HOME_DIR, { recursive: true });
      writeFileSync(process.env.HOME_DIR + "/agentstate.json", JSON.stringify({ retention: { inputsMaxAgeDays: 3 } }));
      const home = agentstate.openStateHome({ home: process.env.HOME_DIR });
      if (home.retention.inputsMaxAgeMs !== 3 * 86400000) throw new Error("retention not read");
      writeFileSync(process.env.HOME_DIR + "/agentstate.json", JSON.stringify({ retention: { inputsMaxAgeDayz: 3 } }));
      let message = "";
      try { home.retention; } catch (error) { message = error.message; }
      home.close();
      if (!message.includes("retention.inputsMaxAgeDayz: unknown key")) throw new Error("said: " + message);
    `);
    expect(loaded).toContain("zod");
  });
});

import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./support/built.js";

const run = promisify(execFile);
const RECORD = new URL("./fixtures/record-imports.mjs", import.meta.url).href;
const DIST = new URL("../dist/", import.meta.url).href;

let dir: string;
beforeAll(requireBuild);
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function loaded(entry: string): Promise<string[]> {
  dir = mkdtempSync(join(tmpdir(), "agentstate-imports-"));
  const log = join(dir, "imports.log");
  await run(
    process.execPath,
    ["--import", RECORD, "--input-type=module", "-e", `await import(${JSON.stringify(entry)});`],
    {
      env: { ...process.env, IMPORT_LOG: log },
    },
  );
  return readFileSync(log, "utf8").split("\n").filter(Boolean);
}

describe("the pi entry point", () => {
  it("is not loaded by import('agentstate'): gateways that do not use pi never pay for it", async () => {
    const urls = await loaded(`${DIST}index.js`);
    expect(urls.some((url) => url.endsWith("/dist/index.js"))).toBe(true);
    expect(
      urls.filter((url) => url.includes("pi-coding-agent") || url.includes("/dist/pi/")),
    ).toEqual([]);
  });

  it("loads pi's SessionManager itself", async () => {
    const urls = await loaded(`${DIST}pi/index.js`);
    expect(urls.some((url) => url.includes("@mariozechner/pi-coding-agent"))).toBe(true);
  });

  it("runs the example of examples/, through the package's own name", async () => {
    dir = mkdtempSync(join(tmpdir(), "agentstate-pi-example-"));
    const example = fileURLToPath(new URL("../examples/pi-session-manager.mjs", import.meta.url));
    const { stdout } = await run(process.execPath, [example, dir]);
    expect(stdout).toMatch(/^session \S+ "Garden"\ncontext: 2 messages, model gpt-4o-mini\n/);
    expect(stdout).toContain('first "Water the basil?"');
  });
});

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { agentDbPath, withRaw } from "../../src/server/test-support/chart-oracle.js";
import { PROJECT_ROOT, requireBuild } from "../support/built.js";

// A session page's usage table in a real browser (Debian's chromium, no network) against a real
// server: the numbers on the page against sums the test makes itself, by SQL over the agent
// database for a hot session and from the JSONL it appended for a cold one. Screenshots go to
// test-results/dashboard/.

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = join(PROJECT_ROOT, "test-results", "dashboard");
const MODELS = [
  ["anthropic", "claude-sonnet-4-5"],
  ["openai", "gpt-5"],
];

interface Sums {
  messages: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: number;
  priced: number;
}

let dir: string;
let profile: string;
let server: RunningServer;
let browser: BrowserContext;
let page: Page;
const scriptErrors: string[] = [];

/** A conversation whose replies vary their usage: some partial, some missing, some unpriced. */
function conversation(seed: number): { type: string; message: Record<string, unknown> }[] {
  const events: { type: string; message: Record<string, unknown> }[] = [];
  for (let i = 0; i < 40; i++) {
    events.push({ type: "message", message: { role: "user", content: `question ${i}` } });
    const [provider, model] = MODELS[(i + seed) % MODELS.length] as [string, string];
    const usage =
      i % 7 === 3
        ? undefined
        : {
            input: 100 * i + seed,
            output: 7 * i,
            ...(i % 5 === 1 ? {} : { cacheRead: 1000 + i, cacheWrite: 3 * i }),
            ...(i % 4 === 2 ? {} : { cost: { total: (i + seed) / 1000 } }),
          };
    events.push({
      type: "message",
      message: {
        role: "assistant",
        provider,
        model,
        content: [{ type: "text", text: "ok" }],
        usage,
      },
    });
  }
  return events;
}

beforeAll(async () => {
  requireBuild();
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  mkdirSync(SHOTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), "agentstate-session-usage-"));
  profile = mkdtempSync(join(tmpdir(), "agentstate-chromium-"));
  const home = openStateHome({ home: join(dir, "home") });
  const agent = home.agent("main");
  agent.transcripts.appendMany("hot-session", conversation(1));
  const cold = conversation(2);
  writeFileSync(join(dir, "cold.jsonl"), cold.map((e) => `${JSON.stringify(e)}\n`).join(""));
  agent.transcripts.appendMany("cold-session", cold);
  agent.cold.move("cold-session");
  home.close();
  server = await startServer({ home: join(dir, "home"), port: 0 });
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on("pageerror", (error) => scriptErrors.push(error.message));
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (profile) rmSync(profile, { recursive: true, force: true });
});

const tokens = (field: string) =>
  `sum(CASE WHEN json_type(event_json, '$.message.usage.${field}') = 'integer'
     THEN json_extract(event_json, '$.message.usage.${field}') ELSE 0 END)`;

/** The hot session's assistant messages summed by model, by plain SQL over the database file. */
function hotBySql(): Map<string, Sums> {
  const rows = withRaw(agentDbPath(join(dir, "home"), "main"), (db) =>
    db
      .prepare(
        `SELECT json_extract(event_json, '$.message.provider') || '/' ||
           json_extract(event_json, '$.message.model') AS name, count(*) AS messages,
           ${tokens("input")} AS input, ${tokens("output")} AS output,
           ${tokens("cacheRead")} AS cacheRead, ${tokens("cacheWrite")} AS cacheWrite,
           total(json_extract(event_json, '$.message.usage.cost.total')) AS cost,
           count(json_extract(event_json, '$.message.usage.cost.total')) AS priced
         FROM transcript_events
         WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = 'hot-session')
           AND json_extract(event_json, '$.message.role') = 'assistant'
         GROUP BY 1`,
      )
      .all(),
  ) as (Sums & { name: string })[];
  return new Map(rows.map(({ name, ...sums }) => [name, sums]));
}

/** The cold session's assistant messages summed by model from the JSONL that was appended. */
function coldFromJsonl(): Map<string, Sums> {
  const out = new Map<string, Sums>();
  for (const line of readFileSync(join(dir, "cold.jsonl"), "utf8").trim().split("\n")) {
    const { message } = JSON.parse(line);
    if (message.role !== "assistant") continue;
    const name = `${message.provider}/${message.model}`;
    const sum = out.get(name) ?? {
      messages: 0,
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0,
      priced: 0,
    };
    const usage = message.usage ?? {};
    sum.messages += 1;
    sum.input += usage.input ?? 0;
    sum.output += usage.output ?? 0;
    sum.cacheRead += usage.cacheRead ?? 0;
    sum.cacheWrite += usage.cacheWrite ?? 0;
    sum.cost += usage.cost?.total ?? 0;
    sum.priced += usage.cost === undefined ? 0 : 1;
    out.set(name, sum);
  }
  return out;
}

const digits = (text: string | undefined) => Number((text ?? "").replaceAll(",", ""));

/** The usage table's rows as sums by model name, "Total" included. */
async function usageOnPage(sessionId: string): Promise<Map<string, Sums & { total: number }>> {
  await page.goto(`${server.url}#/agents/main/sessions/${sessionId}`);
  await page.locator("#session-usage-table").waitFor();
  const rows = await page.evaluate<string[][]>(
    `[...document.querySelectorAll("#session-usage-table tbody tr")].map((tr) =>
       [...tr.querySelectorAll("td")].map((td) => td.textContent.trim()))`,
  );
  return new Map(
    rows.map(([name, messages, input, output, cacheRead, cacheWrite, total, cost, priced]) => [
      name ?? "",
      {
        messages: digits(messages),
        input: digits(input),
        output: digits(output),
        cacheRead: digits(cacheRead),
        cacheWrite: digits(cacheWrite),
        total: digits(total),
        cost: Number(cost),
        priced: Number(priced?.split(" / ")[0]),
      },
    ]),
  );
}

function expectMatches(shown: Map<string, Sums & { total: number }>, want: Map<string, Sums>) {
  const all: Sums = {
    messages: 0,
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    cost: 0,
    priced: 0,
  };
  for (const sums of want.values()) {
    for (const k of Object.keys(all) as (keyof Sums)[]) all[k] += sums[k];
  }
  const expected = new Map([...want, ["Total", all]]);
  expect([...shown.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [name, sums] of expected) {
    const row = shown.get(name);
    const { cost, ...counts } = sums;
    expect(row, name).toMatchObject(counts);
    expect(row?.total, name).toBe(sums.input + sums.output + sums.cacheRead + sums.cacheWrite);
    expect(row?.cost, name).toBeCloseTo(cost, 4);
  }
  expect(all.messages).toBe(40);
  expect(all.priced).toBeLessThan(all.messages);
}

describe("a session page's usage and cost", () => {
  it("shows a hot session's tokens and cost by model as SQL over its events sums them", async () => {
    expectMatches(await usageOnPage("hot-session"), hotBySql());
    await page.locator(".session-usage").screenshot({ path: join(SHOTS, "session-usage-hot.png") });
    expect(scriptErrors).toEqual([]);
  });

  it("shows a cold session's, read from its archive, as the JSONL it came from sums them", async () => {
    expectMatches(await usageOnPage("cold-session"), coldFromJsonl());
    const note = await page.locator(".session-usage p.muted").textContent();
    expect(note).toContain("cold archive");
    await page
      .locator(".session-usage")
      .screenshot({ path: join(SHOTS, "session-usage-cold.png") });
    expect(scriptErrors).toEqual([]);
  });
});

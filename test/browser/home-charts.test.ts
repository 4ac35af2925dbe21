import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import {
  agentDbPath,
  cronCountsBySql,
  eventsPerDayBySql,
  familiesBySql,
  queueCountsBySql,
  scalar,
  type UsageDay,
  usagePerDayBySql,
  withRaw,
} from "../../src/server/test-support/chart-oracle.js";
import { seedCharts } from "../../src/server/test-support/seed-charts.js";
import { seedHome } from "../../src/server/test-support/seed-home.js";
import { seedInbound } from "../../src/server/test-support/seed-inbound.js";
import { requireBuild } from "../support/built.js";

// The home overview and its charts in a real browser (Debian's chromium, no network) against a
// real server on a seeded home. Every table is held against plain SQL over the database files;
// each chart is screenshotted into the test's temp dir, which is kept (its path is printed).

const CHROMIUM = "/usr/bin/chromium";
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const AGENTS = ["main", "research"];

let dir: string;
let home: string;
let shots: string;
let profile: string;
let server: RunningServer;
let browser: BrowserContext;
let page: Page;
const scriptErrors: string[] = [];
const offsite: string[] = [];

beforeAll(async () => {
  requireBuild();
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  dir = mkdtempSync(join(tmpdir(), "agentstate-home-charts-"));
  home = join(dir, "home");
  shots = join(dir, "screenshots");
  mkdirSync(home);
  mkdirSync(shots);
  profile = mkdtempSync(join(tmpdir(), "agentstate-chromium-"));
  const seeded = seedHome(home);
  seedInbound(seeded);
  await seedCharts(seeded);
  server = await startServer({ home, port: 0 });
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: DESKTOP,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on("pageerror", (error) => scriptErrors.push(error.message));
  page.on("request", (request) => {
    if (!request.url().startsWith("http://127.0.0.1:")) offsite.push(request.url());
  });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  // The screenshots stay for a reader; the home and the browser profile go.
  if (home) rmSync(home, { recursive: true, force: true });
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** The text of every body cell of a table, row by row. */
function cells(tableId: string): Promise<string[][]> {
  return page.evaluate<string[][]>(
    `[...document.querySelectorAll("#${tableId} tbody tr")].map((tr) =>
       [...tr.querySelectorAll("td")].map((td) => td.textContent.trim()))`,
  );
}

const digits = (text: string | undefined) => Number((text ?? "").replaceAll(",", ""));

/** Width and height of the canvas each chart drew, by chart name. */
function canvasSizes(): Promise<Record<string, [number, number]>> {
  return page.evaluate<Record<string, [number, number]>>(
    `Object.fromEntries([...document.querySelectorAll(".chart")].map((c) => {
       const canvas = c.querySelector("canvas");
       const box = canvas ? canvas.getBoundingClientRect() : { width: 0, height: 0 };
       return [c.dataset.chart, [box.width, box.height]];
     }))`,
  );
}

async function shotCharts(suffix: string, annotate: (m: string, a: object) => Promise<unknown>) {
  const names = await page.evaluate<string[]>(
    `[...document.querySelectorAll(".chart")].map((c) => c.dataset.chart)`,
  );
  for (const name of names) {
    const path = join(shots, `${name}${suffix}.png`);
    await page.locator(`.chart[data-chart="${name}"]`).screenshot({ path });
    process.stderr.write(`chart screenshot: ${path}\n`);
    await annotate(`chart screenshot ${name}${suffix}`, { path, contentType: "image/png" });
  }
}

/** Events per agent and day, and every agent's usage summed per day, by SQL over the files. */
function usageBySql(days: number) {
  const events = AGENTS.flatMap((agentId) =>
    withRaw(agentDbPath(home, agentId), (db) => eventsPerDayBySql(db, days)).map((r) => ({
      agentId,
      ...r,
    })),
  );
  const byDay = new Map<string, UsageDay>();
  for (const agentId of AGENTS) {
    for (const row of withRaw(agentDbPath(home, agentId), (db) => usagePerDayBySql(db, days))) {
      const into = byDay.get(row.day);
      if (!into) byDay.set(row.day, { ...row });
      else
        for (const k of Object.keys(row) as (keyof UsageDay)[]) if (k !== "day") into[k] += row[k];
    }
  }
  const perDay = [...byDay.values()].sort((a, b) => a.day.localeCompare(b.day));
  const sum = (f: (r: UsageDay) => number) => perDay.reduce((s, r) => s + f(r), 0);
  const totals = {
    events: events.reduce((s, r) => s + r.events, 0),
    messages: sum((r) => r.messages),
    input: sum((r) => r.input),
    output: sum((r) => r.output),
    cacheRead: sum((r) => r.cacheRead),
    cacheWrite: sum((r) => r.cacheWrite),
    cost: sum((r) => r.cost),
    priced: sum((r) => r.priced),
  };
  return { events, perDay, totals };
}

// Counted in the page: the dashboard's CSP forbids the eval that waitForFunction's polling uses.
const usageDayRows = () =>
  page.evaluate<number>(`document.querySelectorAll("#usage-tokens-table tbody tr").length`);

/** The usage section's three tables held against `usageBySql(days)`. */
async function expectUsageTables(days: number) {
  const sql = usageBySql(days);
  const events = await cells("usage-events-table");
  expect(events.map(([agentId, day, n]) => ({ agentId, day, events: digits(n) }))).toEqual(
    sql.events,
  );
  const tokens = await cells("usage-tokens-table");
  expect(tokens.map((r) => r[0])).toEqual(sql.perDay.map((r) => r.day));
  for (const [i, row] of sql.perDay.entries()) {
    const [, input, output, read, write, cost, priced] = tokens[i] ?? [];
    expect([input, output, read, write].map(digits), row.day).toEqual([
      row.input,
      row.output,
      row.cacheRead,
      row.cacheWrite,
    ]);
    expect(Number(cost)).toBeCloseTo(row.cost, 4);
    expect(priced).toBe(`${row.priced} / ${row.messages}`);
  }
  const [totals = []] = await cells("usage-totals-table");
  const t = sql.totals;
  expect(totals.filter((_, i) => i !== 6).map(digits)).toEqual([
    t.events,
    t.messages,
    t.input,
    t.output,
    t.cacheRead,
    t.cacheWrite,
    t.priced,
  ]);
  expect(Number(totals[6])).toBeCloseTo(t.cost, 4);
  return sql;
}

describe("the home overview", () => {
  it("shows each agent's sessions and events and the totals as SQL counts them", async () => {
    await page.goto(server.url);
    await page.locator("#agents-table").waitFor();
    const rows = await cells("agents-table");
    const counts = AGENTS.map((id) =>
      withRaw(agentDbPath(home, id), (db) => ({
        sessions: Number(scalar(db, "SELECT count(*) FROM sessions")),
        events: Number(scalar(db, "SELECT count(*) FROM transcript_events")),
      })),
    );
    expect(rows.map((r) => [r[0], digits(r[3]), digits(r[4])])).toEqual(
      AGENTS.map((id, i) => [id, counts[i]?.sessions, counts[i]?.events]),
    );
    // Last activity is a time, not "last opened"; the check is the last backup's, "ok".
    expect(rows.map((r) => r[2])).toEqual([
      expect.stringMatching(/ago$/),
      expect.stringMatching(/ago$/),
    ]);
    expect(rows.map((r) => r[7])).toEqual(["ok", "ok"]);
    const total = (key: string) => page.locator(`[data-total="${key}"]`).textContent();
    expect(digits((await total("sessions")) ?? "")).toBe(
      counts.reduce((s, c) => s + c.sessions, 0),
    );
    expect(digits((await total("events")) ?? "")).toBe(counts.reduce((s, c) => s + c.events, 0));
    // Disk use: a row per agent, hot and cold; the home's line says what the budget counts.
    const disk = await cells("disk-table");
    expect(disk.map((r) => r[0])).toEqual(AGENTS);
    expect(disk.map((r) => r[2])).toEqual(["0 B", "0 B"]); // no cold session in this home
    expect(await page.locator("#disk-home").textContent()).toMatch(/^Every file of the home: /);
  });

  it("draws every chart, with tables whose numbers equal SQL over the files", async ({
    annotate,
  }) => {
    await page.locator("#storage-table").waitFor();
    await page.locator(".chart canvas").first().waitFor();
    const sizes = await canvasSizes();
    expect(Object.keys(sizes).sort()).toEqual(
      [
        "cron-cleanup",
        "cron-digest",
        "deliveries",
        "storage",
        "usage-events",
        "usage-tokens",
        "usage-cost",
      ].sort(),
    );
    for (const [name, [width, height]] of Object.entries(sizes)) {
      expect(width, name).toBeGreaterThan(100);
      expect(height, name).toBeGreaterThan(100);
    }

    const storage = await cells("storage-table");
    for (const [i, id] of AGENTS.entries()) {
      const sql = withRaw(agentDbPath(home, id), familiesBySql);
      expect(storage[i]?.[0]).toBe(id);
      expect(storage[i]?.slice(1).map(digits)).toEqual([
        sql.events,
        sql.blobs,
        sql.vfs,
        sql.fts,
        sql.other,
        sql.free,
        sql.file,
      ]);
    }

    const cron = await cells("cron-table");
    const expected = cronCountsBySql(home, 30);
    const served = cron.flatMap(([job, day, ok, error, skipped]) =>
      (
        [
          ["ok", ok],
          ["error", error],
          ["skipped", skipped],
        ] as const
      )
        .filter(([, n]) => digits(n) > 0)
        .map(([status, n]) => ({ job, status, day, n: digits(n) })),
    );
    const key = (r: { job?: string; status: string; day?: string }) =>
      `${r.job} ${r.status} ${r.day}`;
    expect(served.sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
      expected.sort((a, b) => key(a).localeCompare(key(b))),
    );

    const queues = await cells("deliveries-table");
    const sql = queueCountsBySql(home);
    const count = (queue: string, status: string) =>
      sql.find((r) => r.queue === queue && r.status === status)?.n ?? 0;
    expect(queues.map((q) => q[0])).toEqual(
      [...new Set(sql.filter((r) => r.status !== "sent").map((r) => r.queue))].sort(),
    );
    for (const [queue = "", pending, sending, unknown, dead, depth] of queues) {
      expect([pending, sending, unknown, dead, depth].map(digits)).toEqual([
        count(queue, "pending"),
        count(queue, "sending"),
        count(queue, "unknown"),
        count(queue, "failed"),
        count(queue, "pending") + count(queue, "sending") + count(queue, "unknown"),
      ]);
    }
    expect(await page.locator("#usage").textContent()).toContain("usage rollups");
    await shotCharts("", annotate);
  });

  it("shows events, tokens and recorded cost per day as SQL over the events' JSON sums them", async () => {
    await page.locator("#usage-tokens-table").waitFor();
    const month = await expectUsageTables(30);
    // The seed's replies: a reply without usage and one without a recorded cost are counted as
    // messages but not as priced; the reply 40 days back is outside the 30 days.
    expect(month.totals.messages - month.totals.priced).toBeGreaterThanOrEqual(2);
    expect(month.totals.input).toBeGreaterThan(0);
    expect(month.totals.cost).toBeGreaterThan(0);

    await page.locator("#usage-days").selectOption("90");
    await expect.poll(usageDayRows).toBeGreaterThan(month.perDay.length);
    const quarter = await expectUsageTables(90);
    expect(quarter.totals.input).toBeGreaterThan(month.totals.input);
    const sizes = await canvasSizes();
    for (const name of ["usage-events", "usage-tokens", "usage-cost"]) {
      expect(sizes[name]?.[0], name).toBeGreaterThan(100);
      expect(sizes[name]?.[1], name).toBeGreaterThan(100);
    }
    await page.locator("#usage-days").selectOption("30");
    await expect.poll(usageDayRows).toBe(month.perDay.length);
  });

  it("fits a phone-width window, charts included", async ({ annotate }) => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.url}#/history`);
    await page.goto(server.url);
    await page.locator(".chart canvas").first().waitFor();
    await page.locator("#storage-table").waitFor();
    expect(
      await page.evaluate<boolean>("document.documentElement.scrollWidth > window.innerWidth + 1"),
    ).toBe(false);
    for (const [name, [width, height]] of Object.entries(await canvasSizes())) {
      expect(width, name).toBeGreaterThan(100);
      expect(width, name).toBeLessThanOrEqual(PHONE.width);
      expect(height, name).toBeGreaterThan(100);
    }
    await shotCharts("-phone", annotate);
    await page.setViewportSize(DESKTOP);
  });

  it("ran without a script error and fetched nothing from another host", () => {
    expect(scriptErrors).toEqual([]);
    expect(offsite).toEqual([]);
  });
});

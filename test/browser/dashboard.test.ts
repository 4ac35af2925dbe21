import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import {
  GROUP_KEY,
  MAIN_KEY,
  type SeededHome,
  seedHome,
} from "../../src/server/test-support/seed-home.js";
import { type SeededInbound, seedInbound } from "../../src/server/test-support/seed-inbound.js";
import { PROJECT_ROOT, requireBuild } from "../support/built.js";

// The dashboard in a real browser (Debian's chromium, no network) against a real server on a
// seeded home. Screenshots go to test-results/dashboard/.

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = join(PROJECT_ROOT, "test-results", "dashboard");
const APPENDER = fileURLToPath(new URL("../fixtures/transcript-appender.mjs", import.meta.url));
const LIVE_WAIT_MS = 5000;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let dir: string;
let profile: string;
let seeded: SeededHome;
let inbound: SeededInbound;
let server: RunningServer;
let browser: BrowserContext;
let page: Page;
const scriptErrors: string[] = [];
/** Requests the page made anywhere but the server under test (a CDN, a font host …). */
const offsite: string[] = [];

beforeAll(async () => {
  requireBuild();
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  mkdirSync(SHOTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), "agentstate-browser-"));
  profile = mkdtempSync(join(tmpdir(), "agentstate-chromium-"));
  seeded = seedHome(dir);
  inbound = seedInbound(seeded);
  server = await startServer({ home: dir, port: 0 });
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: DESKTOP,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
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
  rmSync(dir, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
});

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

/** Whether the page is wider than the window (a phone would have to scroll sideways). */
function overflowsSideways(): Promise<boolean> {
  // A string: the test's TypeScript has no DOM types; the page evaluates it.
  return page.evaluate<boolean>("document.documentElement.scrollWidth > window.innerWidth + 1");
}

/** Appends `count` events to a session from another OS process, as a gateway would. */
function appendFromAnotherProcess(sessionId: string, count: number): Promise<void> {
  const args = JSON.stringify({ home: dir, sessionId, count, writer: "gateway", startAt: 0 });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [APPENDER, args], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on("exit", (code) => {
      const result = JSON.parse(out || "{}") as { errors?: string[] };
      if (code === 0 && result.errors?.length === 0) resolve();
      else reject(new Error(`appender failed: ${code} ${out}`));
    });
  });
}

describe("the dashboard", () => {
  it("lists agents with sizes, then an agent's sessions with their last activity", async () => {
    await page.goto(server.url);
    const agents = page.locator("a.agent-link");
    await expect.poll(() => agents.allTextContents()).toEqual(["main", "research"]);
    await expect.poll(() => page.locator("td.num").first().textContent()).toMatch(/KB|MB/);
    await page.locator("text=Databases").waitFor();
    await shot("agents");

    await agents.first().click();
    await page.locator("a.key-link").first().waitFor();
    const keys = await page.locator("a.key-link").allTextContents();
    expect(keys).toContain(MAIN_KEY);
    expect(await page.locator("time").first().textContent()).toMatch(/ago/);
    await shot("sessions");
  });

  it("filters an agent's sessions by label, channel and archived, sorted by label", async () => {
    await page.goto(`${server.url}#/agents/main`);
    await page.locator("a.key-link").first().waitFor();
    await page.fill("form.filters input[name=label]", "Garden club");
    await page.selectOption("form.filters select[name=archived]", "false");
    await page.selectOption("form.filters select[name=sort]", "label");
    await page.click("form.filters button[type=submit]");
    const keys = page.locator("a.key-link");
    await expect.poll(() => keys.allTextContents()).toEqual([GROUP_KEY]);
    expect(page.url()).toMatch(/label=Garden/);
    await page.goto(`${server.url}#/agents/main?channel=telegram&sort=channel`);
    await expect.poll(() => keys.allTextContents()).toEqual([MAIN_KEY]);
    expect(await page.inputValue("form.filters input[name=channel]")).toBe("telegram");
    expect(await page.inputValue("form.filters select[name=sort]")).toBe("channel");
    await shot("sessions-filtered");
  });

  it("goes from a session key to its conversation: messages, tool call and result, compaction, branch", async () => {
    await page.locator("a.key-link", { hasText: MAIN_KEY }).click();
    await page.locator("h1", { hasText: MAIN_KEY }).waitFor();
    const firstSession = page.locator("a.session-link").first();
    await firstSession.click();
    await page.locator(".event").first().waitFor();
    const conversation = page.locator(".events");
    await expect.poll(() => conversation.locator(".event").count()).toBe(7);
    const text = (await conversation.textContent()) ?? "";
    expect(text).toContain("Remind me to water the basil.");
    expect(text).toContain("reminders_add");
    expect(text).toContain("Reminder created for 08:00");
    expect(text).toContain("Compaction: earlier messages summarised (9,120 tokens before)");
    expect(text).toContain("Keep the garden watered.");
    expect(await conversation.locator(".branch-marker").textContent()).toBe("↳ branch from #2");
    expect(await conversation.locator(".event.off-branch").count()).toBe(4);
    expect(await page.locator(".tree-panel").textContent()).toMatch(
      /#2 forks into #3, #7 \(current\)/,
    );
    await shot("conversation");
  });

  it("searches and shows snippets with the matched words highlighted", async () => {
    await page.fill("#search-form input", "basil");
    await page.press("#search-form input", "Enter");
    await page.locator("li.hit").first().waitFor();
    const marks = await page.locator("li.hit mark").allTextContents();
    expect(marks.length).toBeGreaterThanOrEqual(3);
    for (const mark of marks) expect(mark.toLowerCase()).toBe("basil");
    await shot("search");
    await page.locator("li.hit a.hit-link", { hasText: "research" }).click();
    await page.locator(".event.flash").waitFor();
    expect(await page.locator(".event.flash").textContent()).toContain(
      "Basil varieties that like shade?",
    );
  });

  it("shows live appends from another process within a second or so", async () => {
    await page.goto(`${server.url}#/agents/main/sessions/${seeded.activeId}`);
    await page.locator(".event").first().waitFor();
    await page.locator("#live[data-state='live']").waitFor();
    await appendFromAnotherProcess(seeded.activeId, 3);
    const arrived = page.locator(".event", { hasText: "gateway says 2" });
    await arrived.waitFor({ timeout: LIVE_WAIT_MS });
    const seenAt = Date.now();
    const home = openStateHome({ home: dir, create: false });
    const committedAt =
      home.transcripts.tail({ agentId: "main", sessionId: seeded.activeId }, 1)[0]?.createdAt ?? 0;
    home.close();
    // Reported, not asserted beyond the generous wait: the poll interval is 250 ms.
    process.stderr.write(
      `live append latency (commit → visible in the page): ${seenAt - committedAt} ms\n`,
    );
    expect(await page.locator(".event.new").count()).toBe(3);
    await expect
      .poll(() => page.locator(".tree-panel").textContent(), { timeout: LIVE_WAIT_MS })
      .toMatch(/3 events in the tree; the current branch has 3, ending at #4/);
    await shot("live-append");
  });

  it("shows memory with secrets withheld, and the migration and backup history", async () => {
    await page.goto(`${server.url}#/agents/main/memory`);
    await page.locator("text=Garden watering").waitFor();
    const facts = (await page.locator("table").nth(1).textContent()) ?? "";
    expect(facts).toContain("secret → env:OPENAI_API_KEY");
    expect(facts).toContain("(sensitive: hidden)");
    expect(facts).not.toContain("Garden Lane");
    await shot("memory");
    await page.goto(`${server.url}#/history`);
    await page.locator(`text=${seeded.migrationRunId}`).click();
    await page.locator("text=session_entries").waitFor();
    await page.goto(`${server.url}#/history`);
    await page.locator("text=Backup runs").waitFor();
    await shot("history");
  });

  it("fits a phone-width window", async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.url}#/agents/main`);
    await page.locator("a.key-link").first().waitFor();
    expect(await overflowsSideways()).toBe(false);
    await shot("phone-sessions");
    await page.goto(`${server.url}#/agents/main/sessions/${seeded.sessionId}`);
    await page.locator(".event").first().waitFor();
    expect(await overflowsSideways()).toBe(false);
    await shot("phone-conversation");
    await page.goto(`${server.url}#/search?q=basil`);
    await page.locator("li.hit").first().waitFor();
    expect(await overflowsSideways()).toBe(false);
    await shot("phone-search");
    await page.setViewportSize(DESKTOP);
  });

  it("signs in with the URL a token-protected server prints, live stream included", async () => {
    const guarded = await startServer({ home: dir, port: 0, token: "browser-token-0123456789" });
    try {
      await page.goto(`http://127.0.0.1:${new URL(guarded.url).port}/#/`);
      expect(await page.textContent("body")).toContain("E_UNAUTHORIZED");
      await page.goto(guarded.url);
      expect(new URL(page.url()).search).toBe("");
      await page.locator("a.agent-link").first().waitFor();
      await page.locator("a.agent-link", { hasText: "main" }).click();
      await page.locator("#live[data-state='live']").waitFor();
    } finally {
      await guarded.close();
    }
  });

  it("shows a session key's inputs and deliveries, interrupted and unknown ones highlighted", async () => {
    await page.goto(`${server.url}#/agents/main/keys/${encodeURIComponent(MAIN_KEY)}`);
    const inputs = page.locator("#inputs tbody tr");
    await expect.poll(() => inputs.count()).toBe(4);
    const cells = (row: number) => inputs.nth(row).locator("td").allTextContents();
    const answered = await cells(0);
    expect(answered.slice(0, 3)).toEqual(["completed", expect.stringMatching(/^\d{4}-/), "1"]);
    // Each outcome event id, shortened, with the whole id as its tooltip.
    const ids = inputs.nth(0).locator("td[data-title='Outcome events'] .id");
    expect(await ids.evaluateAll((nodes) => nodes.map((n) => n.getAttribute("title")))).toEqual(
      inbound.answeredEventIds,
    );
    expect((await cells(1))[0]).toBe("interrupted");
    expect((await cells(2))[0]).toBe("interrupted*");
    expect((await cells(3))[0]).toBe("accepted");
    expect(await page.locator("#inputs tr.attention").count()).toBe(2);

    const deliveries = page.locator("#deliveries tbody tr");
    await expect.poll(() => deliveries.count()).toBe(3);
    const sent = deliveries.filter({ hasText: inbound.platformMessageId });
    expect(await sent.locator("td").first().textContent()).toBe("sent");
    const unknown = page.locator("#deliveries tr.attention");
    expect(await unknown.count()).toBe(1);
    expect(await unknown.locator("td").first().textContent()).toBe("unknown");
    expect(await unknown.locator("td[data-title='Settled']").textContent()).toBe("-");
    expect(await unknown.locator("td[data-title='Send started']").textContent()).toMatch(/^\d{4}-/);
    // Highlighted in a colour a reader can see, not just marked in the DOM.
    const shade = await page.evaluate<string>(
      "getComputedStyle(document.querySelector('#deliveries tr.attention td')).backgroundColor",
    );
    expect(shade).not.toBe("rgba(0, 0, 0, 0)");
    await shot("inbound");
    await page.setViewportSize(PHONE);
    expect(await overflowsSideways()).toBe(false);
    await shot("phone-inbound");
    await page.setViewportSize(DESKTOP);
  });

  it("ran without a script error and fetched nothing from another host", () => {
    expect(scriptErrors).toEqual([]);
    expect(offsite).toEqual([]);
  });
});

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/create-backup.js";
import { restoreBackup } from "../../src/backup/restore-backup.js";
import { verifyBackup } from "../../src/backup/verify-backup.js";
import { openStateHome } from "../../src/home.js";
import { requireBuild } from "../support/built.js";

const APPENDER = new URL("../fixtures/backup-appender.mjs", import.meta.url).pathname;

interface Ack {
  id: string;
  seq: number;
  ackAt: number;
}

interface AppenderResult {
  writer: string;
  errors: string[];
  acks: Ack[];
}

/** Starts an appender; resolves `ready` at its first acknowledged append, `done` at its exit. */
function startAppender(args: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [APPENDER, JSON.stringify(args)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
    if (out.startsWith("READY\n")) onReady();
  });
  const done = new Promise<AppenderResult>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`appender ${args.writer} exited with ${code}`));
      resolve(JSON.parse(out.replace(/^READY\n/, "")) as AppenderResult);
    });
  });
  return { ready, done };
}

/** Enough rows that each snapshot takes a moment, so the writers overlap it. */
function seed(home: string): void {
  const state = openStateHome({ home });
  for (const agentId of ["main", "research"]) {
    const text = "x".repeat(400);
    const events = Array.from({ length: 3000 }, (_, i) => ({
      type: "message",
      message: { role: "user", content: [{ type: "text", text: `${i} ${text}` }] },
    }));
    state.transcripts.appendMany({ agentId, sessionId: "history" }, events);
  }
  state.close();
}

function readAll(state: ReturnType<typeof openStateHome>, agentId: string) {
  const scope = { agentId, sessionId: "live" };
  const events = state.transcripts.read(scope, { limit: 10_000 });
  for (let page = events; page.length === 10_000; ) {
    page = state.transcripts.read(scope, { afterSeq: page[page.length - 1]?.seq, limit: 10_000 });
    events.push(...page);
  }
  return events;
}

let dir: string;
beforeAll(requireBuild);
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("backup while writers append", () => {
  it("keeps every event acknowledged before its snapshot began, as a consistent prefix", async () => {
    dir = mkdtempSync(join(tmpdir(), "agentstate-backup-live-"));
    const home = join(dir, "home");
    seed(home);
    const stopFile = join(dir, "stop");
    const writers = [
      { writer: "p1", agentId: "main" },
      { writer: "p2", agentId: "research" },
    ].map((w) => ({ ...w, run: startAppender({ ...w, home, sessionId: "live", stopFile }) }));
    await Promise.all(writers.map((w) => w.run.ready));

    const snapshotStarted = new Map<string, number>();
    const report = await createBackup(home, {
      onProgress: (event) => {
        if (event.phase === "snapshot") snapshotStarted.set(event.entry, Date.now());
      },
    });
    const backupEnded = Date.now();
    writeFileSync(stopFile, "");
    const results = await Promise.all(writers.map((w) => w.run.done));

    expect((await verifyBackup(report.archive)).ok).toBe(true);
    const restored = join(dir, "restored");
    await restoreBackup(report.archive, { home: restored });
    const state = openStateHome({ home: restored, create: false });
    try {
      for (const [i, writer] of writers.entries()) {
        const { acks, errors } = results[i] as AppenderResult;
        expect(errors).toEqual([]);
        const cutoff = snapshotStarted.get(`agents/${writer.agentId}/agent/agent.sqlite`) as number;
        const before = acks.filter((ack) => ack.ackAt < cutoff);
        // The writers really were writing before and during the backup.
        expect(before.length).toBeGreaterThan(0);
        expect(acks.some((ack) => ack.ackAt >= cutoff && ack.ackAt <= backupEnded)).toBe(true);

        const events = readAll(state, writer.agentId);
        const restoredIds = new Set(events.map((event) => event.event.id));
        for (const ack of before) expect(restoredIds.has(ack.id)).toBe(true);
        // Consistent: seq 1..n without gaps, exactly the first acknowledgements, nothing torn.
        expect(events.map((event) => event.seq)).toEqual(events.map((_, n) => n + 1));
        const last = events[events.length - 1]?.seq ?? 0;
        expect(acks.filter((ack) => ack.seq <= last).map((ack) => ack.id)).toEqual(
          events.slice(1).map((event) => event.event.id),
        );
        expect(state.agent(writer.agentId, { create: false }).db.integrityCheck()).toEqual(["ok"]);
      }
      expect(state.db.integrityCheck()).toEqual(["ok"]);
    } finally {
      state.close();
    }
  });
});

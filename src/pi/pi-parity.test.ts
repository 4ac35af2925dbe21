import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AgentState, openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import {
  type Op,
  type RunResult,
  renamed,
  runAdapter,
  runFileMode,
} from "./test-support/pi-script.js";

const tempDir = useTempDirs();
const RUNS = Number(process.env.AGENTSTATE_PI_PARITY_RUNS ?? 25);

/** Every method of pi's SessionManager that a script can call, each at least once. */
const EVERY_METHOD: Op[] = [
  { dt: 0, op: "model", provider: "anthropic", modelId: "claude-sonnet" },
  { dt: 1000, op: "thinking", level: "high" },
  { dt: 1000, op: "message", role: "user", text: "Water the basil" },
  {
    dt: 1000,
    op: "customMessage",
    customType: "ext",
    text: "context",
    display: false,
    details: { k: 1 },
  },
  { dt: 0, op: "custom", customType: "ext-state", data: { step: 1 } },
  { dt: 1000, op: "message", role: "assistant", text: "Done." },
  { dt: 1000, op: "info", name: "  Basil  " },
  { dt: 1000, op: "label", target: 2, label: "asked" },
  { dt: 1000, op: "message", role: "toolResult", text: "file contents" },
  {
    dt: 1000,
    op: "compaction",
    summary: "They talked about basil",
    target: 2,
    tokens: 1234,
    details: { files: ["a"] },
  },
  { dt: 1000, op: "message", role: "user", text: "And the mint?" },
  { dt: 1000, op: "branch", target: 5 },
  { dt: 1000, op: "message", role: "user", text: "Other branch" },
  { dt: 1000, op: "branchSummary", target: 2, summary: "abandoned the mint", fromHook: true },
  { dt: 1000, op: "label", target: 2 },
  { dt: 1000, op: "label", target: 5, label: "kept" },
  { dt: 1000, op: "resetLeaf" },
  { dt: 1000, op: "message", role: "user", text: "New root" },
  { dt: 1000, op: "branchSummary", target: null, summary: "from the root" },
  { dt: 1000, op: "info", name: "" },
  { dt: 1000, op: "reopen" },
  { dt: 1000, op: "message", role: "assistant", text: "after reopen" },
  { dt: 1000, op: "branchedSession", target: 5 },
  { dt: 1000, op: "message", role: "assistant", text: "in the branched session" },
  { dt: 1000, op: "fork", cwd: "/home/user/other" },
  { dt: 1000, op: "message", role: "user", text: "in the fork" },
  { dt: 1000, op: "newSession" },
  { dt: 1000, op: "message", role: "user", text: "fresh" },
  { dt: 1000, op: "message", role: "assistant", text: "fresh reply" },
];

/** Runs the script both ways and checks every getter after every call, and every session's bytes. */
async function compare(script: readonly Op[], seed: number): Promise<AgentState> {
  const dir = tempDir();
  const file = await runFileMode(dir, script, seed);
  const agent = openStateHome({ home: tempDir() }).agent("main");
  const adapter = await runAdapter(agent, script, seed);
  expect(adapter.sessionIds).toHaveLength(file.sessionIds.length);
  const rename = (text: string) => renamed(text, dir, file.sessionIds, adapter.sessionIds);
  expect(adapter.snapshots.map((s) => JSON.parse(s))).toEqual(
    file.snapshots.map((s) => JSON.parse(rename(s))),
  );
  // The file mode wrote only the sessions that reached an assistant message: those compare whole.
  for (const [id, bytes] of file.bytes) {
    const adapterId = adapter.sessionIds[file.sessionIds.indexOf(id)] as string;
    expect(adapter.bytes.get(adapterId)).toBe(rename(bytes));
  }
  // The adapter also lists the sessions pi had not written yet: compare those pi lists.
  const written = new Set(file.bytes.keys());
  const same = new Set(
    [...written].map((id) => adapter.sessionIds[file.sessionIds.indexOf(id)] as string),
  );
  expect(JSON.parse(JSON.stringify(listed(adapter, same)))).toEqual(
    JSON.parse(rename(JSON.stringify(listed(file, written)))),
  );
  return agent;
}

/** List entries of the given sessions, without `path` (pi's file; the adapter's session id). */
function listed(result: RunResult, ids: ReadonlySet<string>): object[] {
  return result.list
    .filter((info) => ids.has(info.id))
    .map(({ path: _, ...info }) => ({ ...info, allMessagesText: info.allMessagesText }));
}

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom("", "  padded  ", "ünï 🦀", "line\nbreak", "\ud800 lone", 'quote " \\'),
);
const anything = fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined });
const dt = fc.constantFrom(0, 1, 1000);
const target = fc.nat(40);

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      dt,
      op: fc.constant("message" as const),
      role: fc.constantFrom("user" as const, "assistant" as const, "toolResult" as const),
      text,
    }),
  },
  fc.record({
    dt,
    op: fc.constant("thinking" as const),
    level: fc.constantFrom("off", "low", "high"),
  }),
  fc.record({
    dt,
    op: fc.constant("model" as const),
    provider: fc.constantFrom("openai", "anthropic"),
    modelId: text,
  }),
  fc.record({
    dt,
    op: fc.constant("compaction" as const),
    summary: text,
    target,
    tokens: fc.nat(),
    details: anything,
  }),
  fc.record({ dt, op: fc.constant("custom" as const), customType: text, data: anything }),
  fc.record({ dt, op: fc.constant("info" as const), name: text }),
  fc.record({
    dt,
    op: fc.constant("customMessage" as const),
    customType: text,
    text,
    display: fc.boolean(),
    details: anything,
  }),
  {
    weight: 2,
    arbitrary: fc.record({
      dt,
      op: fc.constant("label" as const),
      target,
      label: fc.option(text, { nil: undefined }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ dt, op: fc.constant("branch" as const), target }) },
  fc.record({ dt, op: fc.constant("resetLeaf" as const) }),
  fc.record({
    dt,
    op: fc.constant("branchSummary" as const),
    target: fc.option(target, { nil: null }),
    summary: text,
    fromHook: fc.option(fc.boolean(), { nil: undefined }),
  }),
  fc.record({ dt, op: fc.constant("branchedSession" as const), target }),
  fc.record({ dt, op: fc.constant("newSession" as const) }),
  fc.record({ dt, op: fc.constant("reopen" as const) }),
  fc.record({ dt, op: fc.constant("fork" as const), cwd: fc.constantFrom("/a", "/b") }),
);

describe("AgentStateSessionManager against pi's file mode", () => {
  it("matches every getter and the written bytes for a script of every method", async () => {
    await compare(EVERY_METHOD, 7);
  });

  it("round-trips what pi writes of hostile input: lone surrogates, 200 KB tool results, images", async () => {
    const png = randomBytes(96 * 1024).toString("base64");
    const image = { type: "image", data: png, mimeType: "image/png" };
    const agent = await compare(
      [
        {
          dt: 0,
          op: "message",
          role: "user",
          text: "lone \ud800 high, \udfff low, \u2028 separator, \u0000 nul",
        },
        {
          dt: 1,
          op: "rawMessage",
          message: { role: "user", content: [{ type: "text", text: "see" }, image], timestamp: 5 },
        },
        { dt: 1, op: "message", role: "toolResult", text: "x".repeat(200 * 1024) },
        {
          dt: 1,
          op: "customMessage",
          customType: "\udc00",
          text: "\ud83d",
          display: true,
          details: { image },
        },
        { dt: 1, op: "message", role: "assistant", text: "\ud800" },
        { dt: 1, op: "reopen" },
        {
          dt: 1,
          op: "rawMessage",
          message: {
            role: "toolResult",
            toolCallId: "c",
            toolName: "shot",
            content: [image],
            isError: false,
            timestamp: 9,
          },
        },
        { dt: 1, op: "reopen" },
      ],
      11,
    );
    // The image went to blob storage (its base64 is past INLINE_BLOB_THRESHOLD) and came back.
    const blobs = agent.db
      .prepare<{ n: number }>("SELECT count(*) AS n FROM transcript_blobs")
      .get();
    expect(blobs?.n).toBe(1);
  });

  it("matches them for random scripts", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), fc.nat(), async (script, seed) => {
        await compare(script, seed);
      }),
      { numRuns: RUNS },
    );
  });
});

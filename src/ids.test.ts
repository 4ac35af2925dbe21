import { describe, expect, it } from "vitest";
import { StateError } from "./db/errors.js";
import { openStateHome } from "./home.js";
import { checkEventId, checkSessionId, loneSurrogateAt, validateAgentId } from "./ids.js";
import { useTempDirs } from "./test-support/temp-dir.js";

const tempDir = useTempDirs();
const HIGH = "\uD83D"; // the first half of 😀, alone
const LOW = "\uDE00"; // the second half of 😀, alone

function refusal(fn: () => unknown): StateError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StateError) return error;
    throw error;
  }
  throw new Error("expected a StateError, nothing was thrown");
}

const KINDS = [
  { kind: "agent id", check: validateAgentId },
  { kind: "session id", check: checkSessionId },
  { kind: "event id", check: (id: unknown) => checkEventId(id, "s1") },
] as const;

describe("the id validators refuse a lone surrogate, naming the id and its position", () => {
  for (const { kind, check } of KINDS) {
    for (const [half, unit] of [
      [HIGH, "D83D"],
      [LOW, "DE00"],
    ] as const) {
      it(`${kind} with a lone U+${unit}`, () => {
        const id = `ab${half}c`;
        const error = refusal(() => check(id));
        expect(error.code).toBe("E_INVALID_ID");
        expect(error.message).toContain(kind);
        expect(error.message).toContain(`"ab\\u${unit.toLowerCase()}c"`);
        expect(error.message).toContain(`(U+${unit}) at position 2`);
        expect(error.details).toMatchObject({ position: 2 });
        // At the very end too, where there is no next unit to pair with.
        expect(refusal(() => check(`ab${half}`)).details).toMatchObject({ position: 2 });
      });
    }
  }

  it("finds only halves that are not part of a pair", () => {
    expect(loneSurrogateAt("a😀b")).toBe(-1);
    expect(loneSurrogateAt(`${LOW}${HIGH}`)).toBe(0);
    expect(loneSurrogateAt(`😀${LOW}`)).toBe(2);
    expect(loneSurrogateAt(`😀${HIGH}😀`)).toBe(2);
  });
});

describe("the rules each kind of id already had", () => {
  it("session and event ids: 1 to 200 printable characters; a well-formed pair is fine", () => {
    for (const check of [checkSessionId, (id: unknown) => checkEventId(id, "s1")]) {
      for (const bad of ["", "x".repeat(201), "a\nb", "a\u007fb", 7, null]) {
        expect(refusal(() => check(bad)).code, JSON.stringify(bad)).toBe("E_INVALID_ID");
      }
      expect(check("x".repeat(200))).toBe("x".repeat(200));
      expect(check("chat 😀 ünï")).toBe("chat 😀 ünï");
    }
  });

  it("a session id may not be . or .., an event id may", () => {
    expect(refusal(() => checkSessionId("..")).message).toContain("names a directory");
    expect(refusal(() => checkSessionId(".")).code).toBe("E_INVALID_ID");
    expect(checkEventId("..", "s1")).toBe("..");
  });

  it("agent ids stay safe directory names", () => {
    for (const bad of ["", "..", "a/b", ".hidden", "a..b", "x".repeat(65), "ünï", "a😀"]) {
      expect(refusal(() => validateAgentId(bad)).code, bad).toBe("E_INVALID_ID");
    }
    expect(validateAgentId("Agent_7.v2")).toBe("Agent_7.v2");
  });
});

describe("a lone surrogate never reaches a row", () => {
  it("is refused by every store that takes the id, and nothing is written", () => {
    const home = openStateHome({ home: tempDir() });
    expect(refusal(() => home.agent(`main${LOW}`)).details).toMatchObject({ position: 4 });
    const agent = home.agent("main");
    const message = { type: "message", message: { role: "user", content: "hi" } };
    const start = () => agent.lifecycle.start("agent:main:main", { sessionId: `s${HIGH}` });
    expect(refusal(start).details).toMatchObject({ sessionId: `s${HIGH}`, position: 1 });
    expect(refusal(() => agent.transcripts.append(`s${LOW}`, message)).code).toBe("E_INVALID_ID");
    const badEvent = { ...message, id: `e${HIGH}` };
    expect(refusal(() => agent.transcripts.append("s1", badEvent)).details).toMatchObject({
      eventId: `e${HIGH}`,
      position: 1,
    });
    const put = () => agent.toolArtifacts.put(`run${LOW}`, "a", { kind: "text" });
    expect(refusal(put).details).toMatchObject({ runId: `run${LOW}`, position: 3 });
    expect(home.db.prepare("SELECT agent_id FROM agents").all()).toEqual([{ agent_id: "main" }]);
    expect(agent.db.prepare("SELECT count(*) AS n FROM tool_artifacts").get()).toEqual({ n: 0 });
    expect(agent.db.prepare("SELECT count(*) AS n FROM sessions").get()).toEqual({ n: 0 });
    expect(agent.db.prepare("SELECT count(*) AS n FROM transcript_events").get()).toEqual({ n: 0 });

    // A well-formed pair is stored and read back as the same id.
    agent.transcripts.append("s😀", { ...message, id: "e😀" });
    expect(agent.db.prepare("SELECT session_id FROM sessions").all()).toEqual([
      { session_id: "s😀" },
    ]);
    expect(agent.transcripts.get("s😀", "e😀")?.event.id).toBe("e😀");
    home.close();
  });
});

import { describe, expect, it } from "vitest";
import { openStateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";

const tempDir = useTempDirs();

interface Sent {
  sessionId: string;
  input: number;
  output: number;
  cost: number;
}

/** An assistant message with recorded usage; the oracle keeps the same numbers. */
function reply(n: number) {
  const usage = { input: 10 + n, output: 3 * n, cost: { total: n / 100 } };
  return {
    event: {
      type: "message",
      message: { role: "assistant", content: [{ type: "text", text: `reply ${n}` }], usage },
    },
    usage,
  };
}

describe("cold storage and the usage rollups", () => {
  it("a cold session keeps counting, a restore does not count it twice, a delete takes it out", () => {
    const home = openStateHome({ home: tempDir() });
    const agent = home.agent("main");
    const sent: Sent[] = [];
    // Enough appends for several bulk steps, in two sessions, some still pending at the end.
    for (let n = 0; n < 150; n++) {
      const sessionId = n % 3 === 0 ? "cold-one" : "stays-hot";
      const { event, usage } = reply(n);
      agent.transcripts.append(sessionId, event);
      sent.push({ sessionId, input: usage.input, output: usage.output, cost: usage.cost.total });
    }
    const expected = (keep: (s: Sent) => boolean) => {
      const kept = sent.filter(keep);
      return {
        input: kept.reduce((a, s) => a + s.input, 0),
        output: kept.reduce((a, s) => a + s.output, 0),
        cost: Math.round(kept.reduce((a, s) => a + s.cost, 0) * 1e6),
      };
    };
    const totals = () => {
      const days = agent.usage.byDay();
      return {
        input: days.reduce((a, d) => a + d.inputTokens, 0),
        output: days.reduce((a, d) => a + d.outputTokens, 0),
        cost: Math.round(days.reduce((a, d) => a + d.cost, 0) * 1e6),
      };
    };
    const all = expected(() => true);
    expect(totals()).toEqual(all);

    agent.cold.move("cold-one");
    expect(agent.cold.isCold("cold-one")).toBe(true);
    expect(totals()).toEqual(all);

    // An append restores the session; its old events must not be counted a second time.
    const { event, usage } = reply(1000);
    agent.transcripts.append("cold-one", event);
    sent.push({ sessionId: "cold-one", input: usage.input, output: usage.output, cost: 10 });
    expect(agent.cold.isCold("cold-one")).toBe(false);
    expect(totals()).toEqual(expected(() => true));

    // Cold again, then deleted: its usage goes with it, the other session's stays.
    agent.cold.move("cold-one");
    expect(agent.lifecycle.delete("cold-one")).toBe(true);
    expect(totals()).toEqual(expected((s) => s.sessionId !== "cold-one"));
    // Read from a fresh connection too: nothing held in memory explains the numbers.
    home.close();
    const again = openStateHome({ home: home.path, readonly: true });
    const days = again.agent("main").usage.byDay();
    expect(days.reduce((a, d) => a + d.inputTokens, 0)).toBe(
      expected((s) => s.sessionId !== "cold-one").input,
    );
    again.close();
  });
});

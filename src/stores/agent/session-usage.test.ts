import { describe, expect, it } from "vitest";
import { openStateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";

const tempDir = useTempDirs();

function reply(input: number) {
  const usage = { input, output: 1, cacheRead: 0, cacheWrite: 0, cost: { total: 0.01 } };
  return { type: "message", message: { role: "assistant", provider: "p", model: "m", usage } };
}

describe("a session's usage, kept between asks", () => {
  it("follows appends, moves to cold storage and back, and a session made again under its id", () => {
    const home = openStateHome({ home: tempDir() });
    const agent = home.agent("main");
    let expected = 0;
    const append = (...inputs: number[]) => {
      for (const input of inputs) {
        agent.transcripts.append("s", reply(input));
        expected += input;
      }
    };
    const asked = () => {
      const { cold, models } = agent.sessionUsage.bySession("s");
      return { cold, input: models.reduce((n, m) => n + m.inputTokens, 0) };
    };
    append(10, 20, 30);
    // Another session's row above these: a restore then draws new, higher ids for them.
    agent.transcripts.append("other", reply(1000));
    expect(asked()).toEqual({ cold: false, input: expected });
    append(5, 7);
    expect(asked()).toEqual({ cold: false, input: expected });
    agent.cold.move("s");
    expect(asked()).toEqual({ cold: true, input: expected });
    append(11); // restores first
    expect(asked()).toEqual({ cold: false, input: expected });
    agent.cold.move("s");
    agent.cold.restore("s");
    expect(asked()).toEqual({ cold: false, input: expected });

    agent.lifecycle.delete("s");
    expected = 0;
    append(3);
    expect(asked()).toEqual({ cold: false, input: 3 });
    home.close();
  });
});

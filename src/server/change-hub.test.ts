import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { ChangeHub } from "./change-hub.js";

const tempDir = useTempDirs();
const message = { type: "message", message: { role: "user", content: "hi" } };

describe("ChangeHub and the pool of open agents", () => {
  it("keeps a watched agent open while the pool evicts others, and lets go when unwatched", () => {
    const home = openStateHome({ home: tempDir(), maxOpenAgents: 2 });
    home.transcripts.append({ agentId: "watched", sessionId: "s" }, message);
    const hub = new ChangeHub(home, 60_000);
    const unsubscribe = hub.subscribe("watched", () => {});
    const { db } = home.agent("watched");
    for (let i = 0; i < 10; i++)
      home.transcripts.append({ agentId: `a${i}`, sessionId: "s" }, message);
    expect(db.isOpen).toBe(true);
    expect(home.agentPool.pinned).toBe(1);
    unsubscribe();
    expect(home.agentPool.pinned).toBe(0);
    home.transcripts.append({ agentId: "a-last", sessionId: "s" }, message);
    home.transcripts.append({ agentId: "a-last-2", sessionId: "s" }, message);
    expect(db.isOpen).toBe(false);
    hub.close();
    home.close();
  });
});

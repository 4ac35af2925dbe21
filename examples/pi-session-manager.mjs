// Switching a pi-based agent to agentstate: the same SessionManager calls, one constructor changed.
// Run after `npm run build`: node examples/pi-session-manager.mjs [home]
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStateHome } from "agentstate";
import { AgentStateSessionManager } from "agentstate/pi";

const home = openStateHome({ home: process.argv[2] ?? mkdtempSync(join(tmpdir(), "pi-example-")) });
const agent = home.agent("main");

// Before: const session = SessionManager.create(process.cwd());
const session = AgentStateSessionManager.create(agent, "/home/me/garden", {
  sessionKey: "agent:main:main", // optional: keeps the routing entry on this session
});
const ask = session.appendMessage({ role: "user", content: "Water the basil?", timestamp: Date.now() });
session.appendMessage({
  role: "assistant",
  content: [{ type: "text", text: "Yes, every two days." }],
  api: "openai-completions",
  provider: "openai",
  model: "gpt-4o-mini",
  usage: { input: 5, output: 6, cacheRead: 0, cacheWrite: 0, totalTokens: 11 },
  stopReason: "stop",
  timestamp: Date.now(),
});
session.appendLabelChange(ask, "watering");
session.appendSessionInfo("Garden");
// Every call above is already committed: a crash here loses nothing.

// Before: SessionManager.open(sessionFile). The session is named by its id, not a file.
const resumed = AgentStateSessionManager.open(agent, session.getSessionId());
const context = resumed.buildSessionContext();
console.log(`session ${resumed.getSessionId()} "${resumed.getSessionName()}"`);
console.log(`context: ${context.messages.length} messages, model ${context.model?.modelId}`);
for (const info of await AgentStateSessionManager.list(agent, "/home/me/garden")) {
  console.log(`listed: ${info.id} ${info.messageCount} messages, first "${info.firstMessage}"`);
}
// The legacy JSONL, byte for byte what pi's file mode writes, for tools that want a file.
process.stdout.write([...agent.transcripts.exportJsonl(session.getSessionId())].join("").slice(0, 80));
console.log("…");
home.close();

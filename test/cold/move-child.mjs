// Moves every session of one agent to cold storage with the built package, then appends to every
// third one (which restores it), printing "ready" once the home is open: the parent kills it
// with SIGKILL at a random moment after that.
import { openStateHome } from "../../dist/index.js";

const [home, agentId] = process.argv.slice(2);
const state = openStateHome({ home });
const agent = state.agent(agentId);
const ids = agent.transcripts.sessionIds().sort();
process.stdout.write("ready\n");
for (const id of ids) agent.cold.move(id);
ids.forEach((id, i) => {
  if (i % 3 === 0) {
    agent.transcripts.append(id, {
      type: "message",
      message: { role: "user", content: [{ type: "text", text: "after the cold" }] },
    });
  }
});
state.close();
process.stdout.write("done\n");

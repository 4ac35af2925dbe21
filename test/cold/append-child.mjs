// Appends `count` events one by one, a few ms apart, to a session with the built package (each append restores the
// session first when it is cold), then prints how many it appended.
import { openStateHome } from "../../dist/index.js";

const [home, agentId, sessionId, count] = process.argv.slice(2);
const state = openStateHome({ home });
const agent = state.agent(agentId);
process.stdout.write("ready\n");
for (let i = 0; i < Number(count); i++) {
  agent.transcripts.append(sessionId, {
    type: "message",
    message: { role: "user", content: `concurrent ${i}` },
  });
  // Spread over time, so the parent's moves land between appends as well as on them; every 50,
  // a longer pause in which a move can commit even on a loaded machine, where one takes longer
  // than the gap between two appends.
  await new Promise((resolve) => setTimeout(resolve, i % 50 === 49 ? 150 : 2));
}
state.close();
process.stdout.write(`done ${count}\n`);

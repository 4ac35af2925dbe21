// Runs with the built package, where the cold index thread exists. "move": moves every session of
// agent "main" cold and prints how many index jobs the thread was handed. "missing": hands the
// thread a job for a file that is not there, then one for a real file, and prints what each did.
import { join } from "node:path";
import { openStateHome } from "../../dist/index.js";
import { processColdIndexThread } from "../../dist/stores/agent/cold-index-thread.js";

const [mode, home] = process.argv.slice(2);
const thread = processColdIndexThread();
if (mode === "move") {
  const state = openStateHome({ home });
  const agent = state.agent("main");
  for (const id of agent.transcripts.sessionIds().sort()) agent.cold.move(id);
  state.close();
  process.stdout.write(`${JSON.stringify({ jobs: thread.jobs })}\n`);
} else {
  // A real cold index file: a move creates it; this one comes from a home with a cold session.
  const state = openStateHome({ home });
  const agent = state.agent("main");
  const rows = Array.from({ length: 300 }, (_, i) => ({ seq: i + 1, text: `word${i}` }));
  const job = { sessionNo: 999, sessionId: "s", through: 0, rows, driver: agent.db.driverName };
  const outcome = (path) => {
    try {
      thread.wait(thread.post({ ...job, path }));
      return "ok";
    } catch (error) {
      return `${error.name} ${error.code}`;
    }
  };
  const missing = outcome(join(home, "none.sqlite"));
  const real = outcome(agent.cold.index.path);
  state.close();
  process.stdout.write(`${JSON.stringify({ missing, real, jobs: thread.jobs })}\n`);
}

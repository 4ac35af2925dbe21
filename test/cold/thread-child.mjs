// Runs with the built package, where the cold storage thread exists. "move": moves every session of
// agent "main" cold and prints how many jobs the thread was handed; "restore" restores them all.
// "failures": hands the thread an index job for a file that is not there, one for a real file and
// a member to inflate that is not gzip, and prints what each did.
import { join } from "node:path";
import { openStateHome } from "../../dist/index.js";
import { processColdThread } from "../../dist/stores/agent/cold-thread.js";

const [mode, home] = process.argv.slice(2);
const thread = processColdThread();
if (mode === "move") {
  const state = openStateHome({ home });
  const agent = state.agent("main");
  for (const id of agent.transcripts.sessionIds().sort()) agent.cold.move(id);
  state.close();
  process.stdout.write(`${JSON.stringify({ jobs: thread.jobs })}\n`);
} else if (mode === "restore") {
  const state = openStateHome({ home });
  const agent = state.agent("main");
  for (const id of agent.transcripts.sessionIds().sort()) agent.cold.restore(id);
  state.close();
  process.stdout.write(`${JSON.stringify({ jobs: thread.jobs })}\n`);
} else {
  // A real cold index file: a move creates it; this one comes from a home with a cold session.
  const state = openStateHome({ home });
  const agent = state.agent("main");
  const rows = Array.from({ length: 300 }, (_, i) => ({ seq: i + 1, text: `word${i}` }));
  const job = { sessionNo: 999, sessionId: "s", through: 0, rows, driver: agent.db.driverName };
  const outcome = (work) => {
    try {
      thread.wait(thread.post(work));
      return "ok";
    } catch (error) {
      return `${error.name} ${error.code}`;
    }
  };
  const missing = outcome({ ...job, kind: "index", path: join(home, "none.sqlite") });
  const real = outcome({ ...job, kind: "index", path: agent.cold.index.path });
  const notGzip = { kind: "inflate", path: agent.db.path, member: 0, offset: 0, length: 4096 };
  const inflate = outcome(notGzip);
  state.close();
  process.stdout.write(`${JSON.stringify({ missing, real, inflate, jobs: thread.jobs })}\n`);
}

// A second process appending to one session of an agent as fast as it can, for the benches that
// measure reads while another process writes: `node bench/append-child.mjs <home> <agent>
// <session>`. Prints "ready" after its first append; on SIGTERM prints how many it appended, then
// closes and exits. Appends in slices of 10 between event-loop turns, so the signal is seen.
import { openStateHome } from "../dist/index.js";
import { eventFactory, makeVocabulary } from "./fixtures.mjs";

const [home, agentId, sessionId] = process.argv.slice(2);
const state = openStateHome({ home });
const agent = state.agent(agentId);
const next = eventFactory(makeVocabulary(), 404);
let appended = 0;
let stopping = false;

function slice() {
  if (stopping) return;
  for (let i = 0; i < 10; i++) {
    agent.transcripts.append(sessionId, next(), { idempotencyKey: `child-${appended}` });
    appended++;
  }
  if (appended === 10) process.stdout.write("ready\n");
  setImmediate(slice);
}

process.on("SIGTERM", () => {
  stopping = true;
  state.close();
  process.stdout.write(`${appended}\n`, () => process.exit(0));
});
slice();

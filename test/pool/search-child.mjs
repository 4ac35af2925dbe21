// Runs with the built package, where the search threads exist. Opens the home, appends the events
// given as JSON in argv[4] to agents it keeps open in its pool (their search text still waits in
// the writer's memory), then searches every agent for each query of argv[3] and prints the hits
// (or the error) of each, how many agents the threads searched and how many threads still run (kept
// until they have been idle a while; the process exits without waiting for them).

import { processSearchThreads } from "../../dist/agent-search-threads.js";
import { openStateHome } from "../../dist/index.js";

const [home, queriesJson, appendsJson] = process.argv.slice(2);
const state = openStateHome({ home });
for (const { agentId, text } of JSON.parse(appendsJson)) {
  state.transcripts.append(
    { agentId, sessionId: "open" },
    { type: "message", message: { role: "user", content: text } },
  );
}
const results = JSON.parse(queriesJson).map(({ query, limit }) => {
  try {
    return { hits: state.transcripts.search(query, { limit }) };
  } catch (error) {
    return { error: { name: error.name, code: error.code, message: error.message } };
  }
});
const open = state.agentPool.open;
const running = processSearchThreads().running;
state.close();
process.stdout.write(
  `${JSON.stringify({ results, open, running, onThreads: processSearchThreads().searchedOnThreads })}\n`,
);

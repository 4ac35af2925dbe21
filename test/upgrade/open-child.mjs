// Opens one agent of a home with the built package, printing each upgrade progress line as it
// happens (a pipe write is synchronous on Linux, so a line read means its batch has committed).
import { openStateHome } from "../../dist/index.js";

const [home, agentId] = process.argv.slice(2);
const state = openStateHome({
  home,
  onUpgradeProgress: ({ step, done, total }) => process.stdout.write(`${step} ${done}/${total}\n`),
});
state.agent(agentId);
state.close();
process.stdout.write("opened\n");

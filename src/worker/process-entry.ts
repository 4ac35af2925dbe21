// The main module of a forked run process (process mode, e.g. under Node's permission model).
import { serveTurns } from "./worker-host.js";

const send = process.send?.bind(process);
if (send === undefined)
  throw new TypeError("Expected process-entry.js to be started with an IPC channel");

// Tell the parent what killed us before dying, so the result can say more than an exit code.
const die = (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  send({ type: "crash", message }, () => process.exit(1));
};
process.on("uncaughtException", die);
process.on("unhandledRejection", die);
process.on("disconnect", () => process.exit(0));
serveTurns(
  { post: (message) => send(message), onMessage: (handler) => process.on("message", handler) },
  "process",
);

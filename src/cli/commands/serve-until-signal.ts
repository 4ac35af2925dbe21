import type { RunningServer } from "../../server/start-server.js";

/** Keeps serving until SIGINT or SIGTERM, then closes the server (and its streams) cleanly. */
export function serveUntilSignal(server: RunningServer): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      server.close().then(resolve, resolve);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

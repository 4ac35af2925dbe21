import type { Command } from "commander";
import {
  DEFAULT_HOST,
  DEFAULT_PORT,
  type RunningServer,
  startServer,
} from "../../server/start-server.js";
import { addExamples, addHomeOption, type HomeOptions, parseInteger } from "../common.js";

interface ServeOptions extends HomeOptions {
  host: string;
  port: string;
  token?: string;
  write?: boolean;
}

export function registerServe(program: Command): void {
  const command = program
    .command("serve")
    .description("serve the HTTP API and the web dashboard of a home, with live updates")
    .option(
      "--host <host>",
      "address to listen on; any non-loopback one requires --token",
      DEFAULT_HOST,
    )
    .option("--port <port>", "port to listen on (0 picks a free one)", String(DEFAULT_PORT))
    .option(
      "--token <token>",
      "require this token (Bearer header, or the cookie the printed URL sets); default $AGENTSTATE_TOKEN",
    )
    .option(
      "--write",
      "accept writes (append events, labels, entry patches); read-only without it",
    );
  addExamples(command, [
    "agentstate serve",
    "agentstate serve --port 0 --write",
    "agentstate serve --host 0.0.0.0 --token <token>",
  ]);
  addHomeOption(command);
  command.action(async (options: ServeOptions) => {
    const server = await startServer({
      home: options.home ?? "",
      host: options.host,
      port: parseInteger("--port", options.port, 0, 65_535),
      // From the environment, the token stays out of `ps` and shell history.
      token: options.token ?? (process.env.AGENTSTATE_TOKEN || undefined),
      write: options.write === true,
    });
    const mode = options.write ? "writes enabled" : "read-only";
    process.stdout.write(`agentstate dashboard (${mode}): ${server.url}\n`);
    await serveUntilSignal(server);
  });
}

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

import { join } from "node:path";
import type { Command } from "commander";
import { loadClusterConfig } from "../../cluster/cluster-config.js";
import { StateError } from "../../db/errors.js";
import { type GcSchedule, scheduleGc } from "../../gc/gc-schedule.js";
import { openStateHome, resolveHomePath } from "../../home.js";
import { CONFIG_FILE } from "../../maintenance/policy.js";
import { DEFAULT_HOST, DEFAULT_PORT, startServer } from "../../server/start-server.js";
import {
  addExamples,
  addHomeOption,
  type HomeOptions,
  parseDuration,
  parseInteger,
} from "../common.js";
import { summarizeGc } from "./gc-render.js";
import { CLUSTER_HELP, serveCluster } from "./serve-cluster.js";
import { serveUntilSignal } from "./serve-until-signal.js";

export interface ServeOptions extends HomeOptions {
  host: string;
  port: string;
  token?: string;
  write?: boolean;
  maintainEvery?: string;
  clusterHost?: string;
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
    .option("--write", "accept writes (append events, labels, entry patches); read-only without it")
    .option(
      "--maintain-every <duration>",
      "run gc's work on a timer (30m, 6h, 1d; at least 1s): the maintenance policy of agentstate.json, expired rows, retention, each agent's quick_check; a line per run on stderr (not on a cluster host)",
    )
    .option(
      "--cluster-host <name>",
      "this host's name in the cluster (default $AGENTSTATE_HOST, else cluster.host of agentstate.json)",
    )
    .addHelpText("after", CLUSTER_HELP);
  addExamples(command, [
    "agentstate serve",
    "agentstate serve --port 0 --write",
    "agentstate serve --host 0.0.0.0 --token <token>",
    "agentstate serve --maintain-every 6h",
  ]);
  addHomeOption(command);
  command.action(async (options: ServeOptions) => {
    const homePath = resolveHomePath(options.home);
    const cluster = loadClusterConfig(homePath, { host: options.clusterHost });
    if (cluster) return serveCluster({ ...options, home: homePath }, cluster);
    if (options.clusterHost !== undefined) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `--cluster-host needs a cluster section in ${join(homePath, CONFIG_FILE)}`,
      );
    }
    const everyMs =
      options.maintainEvery === undefined
        ? undefined
        : parseDuration("--maintain-every", options.maintainEvery, 1000);
    // With a schedule the command owns the home, so that the server and the runs share it.
    const home =
      everyMs === undefined ? null : openStateHome({ home: options.home ?? "", create: false });
    const server = await startServer({
      home: home ?? options.home ?? "",
      host: options.host,
      port: parseInteger("--port", options.port, 0, 65_535),
      // From the environment, the token stays out of `ps` and shell history.
      token: options.token ?? (process.env.AGENTSTATE_TOKEN || undefined),
      write: options.write === true,
    });
    let schedule: GcSchedule | undefined;
    if (home && everyMs !== undefined) {
      schedule = scheduleGc(home, {
        everyMs,
        onReport: (report) => process.stderr.write(`${summarizeGc(report)}\n`),
        onError: (error) =>
          process.stderr.write(`maintenance failed: ${(error as Error).message}\n`),
      });
    }
    const mode = options.write ? "writes enabled" : "read-only";
    const maintained = options.maintainEvery ? `, maintained every ${options.maintainEvery}` : "";
    process.stdout.write(`agentstate dashboard (${mode}${maintained}): ${server.url}\n`);
    await serveUntilSignal(server);
    schedule?.stop();
    home?.close();
  });
}

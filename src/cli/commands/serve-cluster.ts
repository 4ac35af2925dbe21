import { openClusterHome } from "../../cluster/cluster-home.js";
import type { ClusterOptions } from "../../cluster/cluster-options.js";
import { StateError } from "../../db/errors.js";
import { startServer } from "../../server/start-server.js";
import { parseInteger } from "../common.js";
import type { ServeOptions } from "./serve.js";
import { serveUntilSignal } from "./serve-until-signal.js";

export const CLUSTER_HELP = `
A home whose agentstate.json has a "cluster" section starts as one host of a cluster: each agent
route wins the agent's lease on first use (409 E_NOT_OWNER, naming the owner, while another host
holds it), writes go to the agent this host owns, POST /api/agents/<id>/durable waits until the
off-host replica holds them, and SIGTERM or SIGINT release every lease before the process exits.
  "cluster": { "host": "a", "controlPlane": "postgres://…", "replicas": "/mnt/replicas",
               "leaseMs": 10000, "syncIntervalMs": 1000 }
"replicas" may be an S3-compatible bucket: "s3://bucket/prefix" with "s3": { "endpoint", "region" },
its keys in LITESTREAM_ACCESS_KEY_ID/LITESTREAM_SECRET_ACCESS_KEY (else AWS_*), never in the file.
$AGENTSTATE_CONTROL_PLANE replaces cluster.controlPlane (a password stays out of the file);
--cluster-host, else $AGENTSTATE_HOST, replaces cluster.host. --maintain-every is refused there.`;

/** `agentstate serve` on a cluster host: the same server over a cluster home, closed on a signal. */
export async function serveCluster(
  options: ServeOptions & { home: string },
  cluster: ClusterOptions,
): Promise<void> {
  if (options.maintainEvery !== undefined) {
    // gc walks every agent of the home, and a cluster host may serve only the ones it owns.
    throw new StateError(
      "E_INVALID_ARGUMENT",
      "--maintain-every is not available on a cluster host: run agentstate gc on a single-host home",
    );
  }
  const port = parseInteger("--port", options.port, 0, 65_535);
  const home = await openClusterHome({ home: options.home, cluster });
  try {
    const server = await startServer({
      home,
      host: options.host,
      port,
      token: options.token ?? (process.env.AGENTSTATE_TOKEN || undefined),
      write: options.write === true,
    });
    const mode = options.write ? "writes enabled" : "read-only";
    process.stdout.write(
      `agentstate dashboard (${mode}, cluster host ${cluster.host}): ${server.url}\n`,
    );
    await serveUntilSignal(server);
  } finally {
    // Releases each lease after a last sync, then stops Litestream: the next owner starts at once.
    await home.close();
  }
}

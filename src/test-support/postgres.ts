import { afterAll, beforeAll } from "vitest";
import { type Cluster, startCluster } from "../../scripts/postgres-cluster.mjs";

/**
 * One throwaway PostgreSQL cluster for the calling test file: started before its tests, stopped
 * and removed after them, whether they passed or not. Returns a getter for its connection URL.
 */
export function usePostgres(): () => string {
  let cluster: Cluster | undefined;
  const stopAtExit = () => cluster?.stop();
  beforeAll(async () => {
    cluster = await startCluster();
    // A worker torn down without running afterAll must not leave a server behind.
    process.once("exit", stopAtExit);
  }, 60_000);
  afterAll(() => {
    process.off("exit", stopAtExit);
    cluster?.stop();
    cluster = undefined;
  });
  return () => {
    if (!cluster) throw new Error("usePostgres(): the cluster is started in beforeAll");
    return cluster.url;
  };
}

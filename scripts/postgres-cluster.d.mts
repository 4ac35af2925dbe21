export function findPostgresBin(): string | undefined;
export interface Cluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth, loopback only). */
  url: string;
  dir: string;
  /** Stops the server at once and removes its directory; safe to call twice. */
  stop(): void;
}
export function startCluster(options?: { durable?: boolean }): Promise<Cluster>;

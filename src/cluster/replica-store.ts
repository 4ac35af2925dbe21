import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ReplicaTarget } from "./cluster-options.js";
import { listDir } from "./replica-layout.js";
import { S3ReplicaStore } from "./s3-replica-store.js";

/** One replica's settings in Litestream's config (its `sync-interval` is added by the caller). */
export type LitestreamReplica = Readonly<Record<string, string | boolean>>;

/**
 * The reads agentstate makes of a replica itself (Litestream makes every write): which epochs an
 * agent has, which snapshots and WAL segments a generation holds, and a segment's bytes. Paths
 * are relative to the replicas' root, `/`-separated (`<agentId>/e<epoch>/generations/…`).
 */
export interface ReplicaStore {
  /** The names one level below `path`, folders and files alike; none if it does not exist. */
  list(path: string): Promise<string[]>;
  /** The whole file at `path`, or undefined if it is gone. */
  read(path: string): Promise<Uint8Array | undefined>;
  /** Litestream's replica settings for the prefix `path`. */
  litestreamReplica(path: string): LitestreamReplica;
  /** `path` as a user finds it: a directory or an `s3://` URL. */
  describe(path: string): string;
  /** How often `durable()` looks at the replica while it waits. */
  readonly pollMs: number;
}

/** A replica directory, on a mount shared by the hosts. */
export class FileReplicaStore implements ReplicaStore {
  /** A look is a few local reads. */
  readonly pollMs = 50;

  constructor(readonly directory: string) {}

  async list(path: string): Promise<string[]> {
    return listDir(join(this.directory, path));
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    try {
      return readFileSync(join(this.directory, path));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  litestreamReplica(path: string): LitestreamReplica {
    return { type: "file", path: this.describe(path) };
  }

  describe(path: string): string {
    return join(this.directory, path);
  }
}

export function openReplicaStore(target: ReplicaTarget): ReplicaStore {
  return target.kind === "file"
    ? new FileReplicaStore(target.directory)
    : new S3ReplicaStore(target);
}

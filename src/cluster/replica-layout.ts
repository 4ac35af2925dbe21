import { readdirSync, statSync } from "node:fs";
import { lz4DecodedLength } from "./lz4-frame.js";
import type { ReplicaStore } from "./replica-store.js";

/**
 * Where one epoch of an agent is replicated, relative to the replicas' root: a prefix no other
 * owner ever writes.
 */
export function epochPrefix(agentId: string, epoch: number): string {
  return `${agentId}/e${epoch}`;
}

/**
 * The newest epoch below `below` whose prefix holds a generation: the last owner's. An owner
 * that died before its first snapshot left an empty prefix, so the one before it is the latest.
 */
export async function latestReplicaEpoch(
  store: ReplicaStore,
  agentId: string,
  below: number,
): Promise<number | undefined> {
  const epochs = (await store.list(agentId))
    .map((name) => /^e(\d+)$/.exec(name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .filter((n) => n < below)
    .sort((a, b) => b - a);
  for (const epoch of epochs) {
    if (await hasSnapshot(store, epochPrefix(agentId, epoch))) return epoch;
  }
  return undefined;
}

async function hasSnapshot(store: ReplicaStore, prefix: string): Promise<boolean> {
  const generations = `${prefix}/generations`;
  for (const generation of await store.list(generations)) {
    if ((await store.list(`${generations}/${generation}/snapshots`)).length > 0) return true;
  }
  return false;
}

/** A point in a Litestream generation: the WAL index and the byte offset in that WAL. */
export interface WalPosition {
  generation: string;
  index: number;
  offset: number;
}

/**
 * The decoded lengths of segments read before, by path: a segment never changes once listed, and
 * a bucket charges for every read, so `durable()` polling the same last segment reads it once.
 */
export class SegmentLengths {
  private last: { path: string; length: number } | undefined;

  async of(store: ReplicaStore, path: string): Promise<number | undefined> {
    if (this.last?.path === path) return this.last.length;
    const bytes = await store.read(path);
    if (bytes === undefined) return undefined;
    this.last = { path, length: lz4DecodedLength(bytes) };
    return this.last.length;
  }
}

/**
 * How far the replica under `prefix` holds `generation`: the end of its furthest WAL segment
 * (files `wal/<index>_<offset>.wal.lz4`, each an LZ4 frame of the WAL bytes from `offset`).
 * Litestream 0.3's frames carry no content size, so the segment is read whole to count it.
 * A segment is written to a temporary name and renamed (one PUT in a bucket), so a listed one
 * is whole; unless gone.
 */
export async function replicaPosition(
  store: ReplicaStore,
  prefix: string,
  generation: string,
  lengths = new SegmentLengths(),
): Promise<WalPosition | undefined> {
  const dir = `${prefix}/generations/${generation}/wal`;
  let best: { index: number; offset: number; file: string } | undefined;
  for (const file of await store.list(dir)) {
    const match = /^([0-9a-f]{8})_([0-9a-f]{8})\.wal\.lz4$/.exec(file);
    if (!match) continue;
    const index = Number.parseInt(match[1] as string, 16);
    const offset = Number.parseInt(match[2] as string, 16);
    if (!best || index > best.index || (index === best.index && offset > best.offset)) {
      best = { index, offset, file };
    }
  }
  if (!best) return undefined;
  const length = await lengths.of(store, `${dir}/${best.file}`);
  if (length === undefined) return undefined;
  return { generation, index: best.index, offset: best.offset + length };
}

export function listDir(path: string): string[] {
  try {
    return statSync(path).isDirectory() ? readdirSync(path) : [];
  } catch {
    return [];
  }
}

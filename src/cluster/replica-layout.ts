import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { lz4DecodedLength } from "./lz4-frame.js";

/** Where one epoch of an agent is replicated: a prefix no other owner ever writes. */
export function epochPrefix(replicas: string, agentId: string, epoch: number): string {
  return join(replicas, agentId, `e${epoch}`);
}

/**
 * The newest epoch below `below` whose prefix holds a generation: the last owner's. An owner
 * that died before its first snapshot left an empty prefix, so the one before it is the latest.
 */
export function latestReplicaEpoch(
  replicas: string,
  agentId: string,
  below: number,
): number | undefined {
  const epochs = listDir(join(replicas, agentId))
    .map((name) => /^e(\d+)$/.exec(name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .filter((n) => n < below)
    .sort((a, b) => b - a);
  return epochs.find((e) => hasSnapshot(epochPrefix(replicas, agentId, e)));
}

function hasSnapshot(prefix: string): boolean {
  const generations = join(prefix, "generations");
  return listDir(generations).some((g) => listDir(join(generations, g, "snapshots")).length > 0);
}

/** A point in a Litestream generation: the WAL index and the byte offset in that WAL. */
export interface WalPosition {
  generation: string;
  index: number;
  offset: number;
}

/**
 * How far the replica under `prefix` holds `generation`: the end of its furthest WAL segment
 * (files `wal/<index>_<offset>.wal.lz4`, each an LZ4 frame of the WAL bytes from `offset`).
 */
export function replicaPosition(prefix: string, generation: string): WalPosition | undefined {
  const dir = join(prefix, "generations", generation, "wal");
  let best: { index: number; offset: number; file: string } | undefined;
  for (const file of listDir(dir)) {
    const match = /^([0-9a-f]{8})_([0-9a-f]{8})\.wal\.lz4$/.exec(file);
    if (!match) continue;
    const index = Number.parseInt(match[1] as string, 16);
    const offset = Number.parseInt(match[2] as string, 16);
    if (!best || index > best.index || (index === best.index && offset > best.offset)) {
      best = { index, offset, file };
    }
  }
  if (!best) return undefined;
  const length = readSegmentLength(join(dir, best.file));
  if (length === undefined) return undefined;
  return { generation, index: best.index, offset: best.offset + length };
}

/** A segment is written to a temporary name and renamed, so a listed one is whole; unless gone. */
function readSegmentLength(path: string): number | undefined {
  try {
    return lz4DecodedLength(readFileSync(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

export function listDir(path: string): string[] {
  try {
    return statSync(path).isDirectory() ? readdirSync(path) : [];
  } catch {
    return [];
  }
}

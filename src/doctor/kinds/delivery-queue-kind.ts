import { basename } from "node:path";
import { isStateError } from "../../db/errors.js";
import type { NewDeliveryEntry } from "../../stores/global/delivery-queue-rows.js";
import type { JsonValue } from "../../stores/json.js";
import { isRecord } from "../../transcript/record.js";
import { deliveryQueueOf, type LegacySource } from "../discover.js";
import { readJsonDocument } from "../sources/cron-source.js";
import { type ImportOutcome, type KindHandler, problem, type SourceScan } from "./types.js";

function optionalString(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function optionalCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * One queued delivery file (`delivery-queue/<id>.json`, dead letters in `failed/`) as a queue
 * entry: the whole file is the payload, kept verbatim; id, channel, session, attempts and the last
 * error become columns so the entry is claimable (or stays dead-lettered) as before.
 */
function entryOf(source: LegacySource, doc: unknown): NewDeliveryEntry {
  if (!isRecord(doc)) throw new Error("not a JSON object");
  const where = deliveryQueueOf(source.path);
  const mirror = isRecord(doc.mirror) ? doc.mirror : {};
  const fields: Record<string, unknown> = {
    id: optionalString(doc.id) ?? basename(source.path, ".json"),
    payload: doc as JsonValue,
    channel: optionalString(doc.channel),
    sessionKey: optionalString(doc.sessionKey) ?? optionalString(mirror.sessionKey),
    enqueuedAt: optionalCount(doc.enqueuedAt),
    retryCount: optionalCount(doc.retryCount),
    lastError: optionalString(doc.lastError),
    status: where?.failed ? "failed" : "pending",
  };
  return Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== undefined),
  ) as unknown as NewDeliveryEntry;
}

export const deliveryQueueKind: KindHandler = {
  scan(absPath, source): SourceScan {
    const doc = readJsonDocument(absPath);
    if (doc === undefined) return { records: 0, problems: [], notes: ["empty file"] };
    entryOf(source, doc);
    return { records: 1, problems: [], notes: [] };
  },
  import(context): ImportOutcome {
    const { source, home } = context;
    const doc = readJsonDocument(source.absPath);
    if (doc === undefined) return { records: 0, alreadyPresent: 0, problems: [] };
    const entry = entryOf(source, doc);
    const queue = deliveryQueueOf(source.path)?.queue as string;
    try {
      home.queue.enqueue(queue, entry);
      return { records: 1, alreadyPresent: 0, problems: [] };
    } catch (error) {
      // The same id already queued: a rerun, or the gateway re-queued it after the first import.
      if (isStateError(error, "E_CONFLICT")) return { records: 1, alreadyPresent: 1, problems: [] };
      if (!isStateError(error, "E_INVALID_ARGUMENT") && !isStateError(error, "E_TOO_LARGE"))
        throw error;
      return {
        records: 0,
        alreadyPresent: 0,
        problems: [problem(null, (error as Error).message, entry.id ?? null)],
      };
    }
  },
};

import { createHash } from "node:crypto";
import { StateError } from "../db/errors.js";
import type { TranscriptEvent } from "./event.js";
import { encodeEvent } from "./jsonl-codec.js";
import { isRecord } from "./record.js";

export const BLOB_REF_PREFIX = "blob:sha256:";

const BLOB_REF = /^blob:sha256:[0-9a-f]{64}$/;
// In a `u` regex a surrogate range matches only unpaired halves, which UTF-8 cannot carry.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export interface ExtractedBlob {
  sha256: string;
  mimeType: string | null;
  /** The UTF-8 bytes of the base64 text as written, not the decoded image: restore is exact. */
  data: Buffer;
}

/** True for a string that is exactly a blob reference (prefix and 64 lowercase hex digits). */
export function isBlobRef(value: unknown): boolean {
  return typeof value === "string" && BLOB_REF.test(value);
}

type ImageBlock = Record<string, unknown> & { type: "image"; data: string };

function isImageBlock(value: Record<string, unknown>): value is ImageBlock {
  return value.type === "image" && typeof value.data === "string";
}

/**
 * Rebuilds `value` with `rewrite` applied to the `data` of every image block, however deeply
 * nested (tool results carry their own content arrays). Unchanged subtrees keep their identity;
 * Object.fromEntries keeps key order and defines `__proto__` as an own key, as JSON.parse did.
 */
function mapImageData(value: unknown, rewrite: (block: ImageBlock) => string): unknown {
  if (Array.isArray(value)) {
    const items = value.map((item) => mapImageData(item, rewrite));
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  if (!isRecord(value)) return value;
  let changed = false;
  const entries = Object.entries(value).map(([key, child]): [string, unknown] => {
    const next =
      key === "data" && isImageBlock(value) ? rewrite(value) : mapImageData(child, rewrite);
    changed ||= next !== child;
    return [key, next];
  });
  return changed ? Object.fromEntries(entries) : value;
}

/** A copy of `event` with `rewrite` applied under `message.content`; the input is never mutated. */
function withContent(
  event: TranscriptEvent,
  rewrite: (block: ImageBlock) => string,
): TranscriptEvent {
  const message = event.message;
  const content = isRecord(message) ? message.content : undefined;
  const next = Array.isArray(content) ? mapImageData(content, rewrite) : content;
  const copy = Object.fromEntries(Object.entries(event)) as TranscriptEvent;
  if (next !== content && isRecord(message)) {
    copy.message = Object.fromEntries(
      Object.entries(message).map(([key, v]) => [key, key === "content" ? next : v]),
    );
  }
  return copy;
}

/**
 * Moves large inline images out of an event, leaving `"blob:sha256:<hex>"` in their `data`.
 * Image data that already looks like a reference is always extracted, whatever its size, so that
 * every reference in a stored event is a real one and hostile input still round-trips. Data with
 * unpaired surrogates is left inline: it is not base64, and UTF-8 could not store it exactly.
 */
export function extractInlineBlobs(
  event: TranscriptEvent,
  thresholdBytes: number,
): { event: TranscriptEvent; blobs: ExtractedBlob[] } {
  if (!Number.isFinite(thresholdBytes) || thresholdBytes < 0) {
    throw new TypeError(
      `Expected thresholdBytes to be a finite number >= 0, got ${thresholdBytes}`,
    );
  }
  const blobs = new Map<string, ExtractedBlob>();
  const extracted = withContent(event, (block) => {
    const text = block.data;
    const large = text.length >= thresholdBytes && !LONE_SURROGATE.test(text);
    if (!large && !isBlobRef(text)) return text;
    const data = Buffer.from(text, "utf8");
    const sha256 = createHash("sha256").update(data).digest("hex");
    const mimeType = typeof block.mimeType === "string" ? block.mimeType : null;
    if (!blobs.has(sha256)) blobs.set(sha256, { sha256, mimeType, data });
    return `${BLOB_REF_PREFIX}${sha256}`;
  });
  return { event: extracted, blobs: [...blobs.values()] };
}

/**
 * The JSON stored for an event and the blobs moved out of it. Most events are far shorter than
 * the threshold and hold no reference-like string, so no image in them can need extracting: their
 * encoding is kept as is, without walking the content.
 */
export function encodeForStorage(
  event: TranscriptEvent,
  thresholdBytes: number,
): { json: string; blobs: ExtractedBlob[] } {
  const json = encodeEvent(event);
  if (json.length < thresholdBytes && !json.includes(BLOB_REF_PREFIX)) return { json, blobs: [] };
  const extracted = extractInlineBlobs(event, thresholdBytes);
  return { json: encodeEvent(extracted.event), blobs: extracted.blobs };
}

/** Puts extracted images back; throws `E_NOT_FOUND` naming the first blob `lookup` lacks. */
export function restoreInlineBlobs(
  event: TranscriptEvent,
  lookup: (sha256: string) => Buffer | undefined,
): TranscriptEvent {
  return withContent(event, (block) => {
    if (!isBlobRef(block.data)) return block.data;
    const sha256 = block.data.slice(BLOB_REF_PREFIX.length);
    const data = lookup(sha256);
    if (data === undefined) {
      throw new StateError("E_NOT_FOUND", `blob sha256:${sha256} is missing (event ${event.id})`, {
        details: { sha256, eventId: event.id },
      });
    }
    return data.toString("utf8");
  });
}

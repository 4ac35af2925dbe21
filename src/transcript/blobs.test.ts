import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import {
  BLOB_REF_PREFIX,
  type ExtractedBlob,
  encodeForStorage,
  extractInlineBlobs,
  isBlobRef,
  restoreInlineBlobs,
} from "./blobs.js";
import type { TranscriptEvent } from "./event.js";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

function userMessage(content: unknown): TranscriptEvent {
  return {
    type: "message",
    id: "u1",
    parentId: null,
    timestamp: "2026-01-31T07:26:10.958Z",
    message: { role: "user", content, timestamp: 1769844370957 },
  };
}

const lookupIn = (blobs: ExtractedBlob[]) => (hex: string) =>
  blobs.find((b) => b.sha256 === hex)?.data;

describe("extractInlineBlobs", () => {
  const event = userMessage([
    { type: "text", text: "look" },
    { type: "image", data: PNG, mimeType: "image/png" },
    { type: "image", mimeType: "image/jpeg", data: "small" },
  ]);

  it("replaces large image data with a reference and keeps key order", () => {
    const { event: out, blobs } = extractInlineBlobs(event, 64);
    expect(blobs).toEqual([
      { sha256: sha(PNG), mimeType: "image/png", data: Buffer.from(PNG, "utf8") },
    ]);
    const content = (out.message as { content: Record<string, unknown>[] }).content;
    expect(content[1]).toEqual({
      type: "image",
      data: `${BLOB_REF_PREFIX}${sha(PNG)}`,
      mimeType: "image/png",
    });
    expect(Object.keys(content[2] ?? {})).toEqual(["type", "mimeType", "data"]);
    expect(content[2]?.data).toBe("small");
    expect(Object.keys(out)).toEqual(Object.keys(event));
  });

  it("does not mutate its input and returns a new event", () => {
    const before = JSON.stringify(event);
    const { event: out } = extractInlineBlobs(event, 0);
    expect(JSON.stringify(event)).toBe(before);
    expect(out).not.toBe(event);
    expect(extractInlineBlobs(event, 1e9).event).not.toBe(event);
  });

  it("finds images nested in tool-result content and stores each blob once", () => {
    const nested = userMessage([
      { type: "tool_result", content: [{ type: "image", data: PNG }] },
      { type: "image", data: PNG, mimeType: "image/png" },
    ]);
    const { blobs } = extractInlineBlobs(nested, 10);
    expect(blobs.map((b) => [b.sha256, b.mimeType])).toEqual([[sha(PNG), null]]);
  });

  it("always extracts data that already looks like a reference", () => {
    const forged = `${BLOB_REF_PREFIX}${"0".repeat(64)}`;
    const { event: out, blobs } = extractInlineBlobs(
      userMessage([{ type: "image", data: forged }]),
      1e9,
    );
    expect(blobs.map((b) => b.data.toString())).toEqual([forged]);
    expect(restoreInlineBlobs(out, lookupIn(blobs))).toEqual(
      userMessage([{ type: "image", data: forged }]),
    );
  });

  it("leaves data with unpaired surrogates inline", () => {
    const odd = userMessage([{ type: "image", data: "ab\uD800cd" }]);
    expect(extractInlineBlobs(odd, 0).blobs).toEqual([]);
  });

  it("ignores events without content arrays", () => {
    const custom: TranscriptEvent = {
      type: "custom",
      id: "c",
      timestamp: "t",
      data: { data: PNG },
    };
    expect(extractInlineBlobs(custom, 0)).toEqual({ event: custom, blobs: [] });
    expect(extractInlineBlobs(userMessage(PNG), 0).blobs).toEqual([]);
  });

  it("rejects a bad threshold", () => {
    expect(() => extractInlineBlobs(event, -1)).toThrow(TypeError);
    expect(() => extractInlineBlobs(event, Number.NaN)).toThrow(TypeError);
  });
});

describe("restoreInlineBlobs", () => {
  it("puts the original text back", () => {
    const event = userMessage([{ type: "image", data: PNG, mimeType: "image/png" }]);
    const { event: out, blobs } = extractInlineBlobs(event, 0);
    expect(JSON.stringify(restoreInlineBlobs(out, lookupIn(blobs)))).toBe(JSON.stringify(event));
  });

  it("names the missing blob", () => {
    const { event: out } = extractInlineBlobs(userMessage([{ type: "image", data: PNG }]), 0);
    try {
      restoreInlineBlobs(out, () => undefined);
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_NOT_FOUND")).toBe(true);
      expect(String(error)).toContain(sha(PNG));
    }
  });

  it("leaves prefix-looking strings that are not exact references alone", () => {
    expect(isBlobRef(`${BLOB_REF_PREFIX}abc`)).toBe(false);
    const event = userMessage([{ type: "image", data: `${BLOB_REF_PREFIX}abc` }]);
    expect(restoreInlineBlobs(event, () => undefined)).toEqual(event);
  });
});

const dataArb = fc.oneof(
  fc.base64String({ maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ maxLength: 20 }).map((s) => `${BLOB_REF_PREFIX}${s}`),
  fc.constant(`${BLOB_REF_PREFIX}${"a".repeat(64)}`),
);
const imageArb = fc.record(
  { type: fc.constant("image"), data: dataArb, mimeType: fc.constantFrom("image/png", 7) },
  { requiredKeys: ["type", "data"] },
);
const blockArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  block: fc.oneof(
    { depthSize: "small" },
    imageArb,
    fc.record({ type: fc.constant("text"), text: fc.string() }),
    fc.record({
      type: fc.constant("tool_result"),
      content: fc.array(tie("block"), { maxLength: 3 }),
    }),
    fc.jsonValue({ maxDepth: 2 }),
  ),
})).block;

/** Image `data` strings left inline, wherever they are nested. */
function inlineData(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(inlineData);
  if (typeof value !== "object" || value === null) return [];
  const record = value as Record<string, unknown>;
  const own = record.type === "image" && typeof record.data === "string" ? [record.data] : [];
  return [...own, ...Object.values(record).flatMap(inlineData)];
}

describe("blob properties", () => {
  it("restore(extract(e)) gives e back exactly, and no reference is left dangling", () => {
    fc.assert(
      fc.property(fc.array(blockArb, { maxLength: 6 }), fc.nat({ max: 250 }), (content, limit) => {
        const event = userMessage(content);
        const before = JSON.stringify(event);
        const { event: stored, blobs } = extractInlineBlobs(event, limit);
        const restored = restoreInlineBlobs(stored, lookupIn(blobs));
        expect(JSON.stringify(restored)).toBe(before);
        expect(restored).toEqual(event);
        expect(JSON.stringify(event)).toBe(before);
        for (const data of inlineData(stored.message)) {
          // Left inline: a real reference, small, or not storable as UTF-8.
          const kept = isBlobRef(data) || data.length < limit || /[\uD800-\uDFFF]/u.test(data);
          expect(kept).toBe(true);
          if (isBlobRef(data))
            expect(lookupIn(blobs)(data.slice(BLOB_REF_PREFIX.length))).toBeDefined();
        }
        for (const blob of blobs) {
          expect(createHash("sha256").update(blob.data).digest("hex")).toBe(blob.sha256);
        }
      }),
    );
  });
});

describe("encodeForStorage", () => {
  it("keeps a short event's encoding and walks only events that could hold a blob", () => {
    const small = userMessage([{ type: "image", data: PNG, mimeType: "image/png" }]);
    expect(encodeForStorage(small, 1024)).toEqual({ json: JSON.stringify(small), blobs: [] });

    // A reference-like string is extracted whatever the event's size (hostile input).
    const fake = `${BLOB_REF_PREFIX}${"a".repeat(64)}`;
    const spoof = encodeForStorage(userMessage([{ type: "image", data: fake }]), 1024);
    expect(spoof.blobs.map((b) => b.data.toString("utf8"))).toEqual([fake]);
    expect(spoof.json).toContain(`${BLOB_REF_PREFIX}${sha(fake)}`);

    // At the threshold exactly: the data string is as long as the threshold, so it moves out.
    const data = "A".repeat(2048);
    const large = encodeForStorage(userMessage([{ type: "image", data }]), 2048);
    expect(large.blobs).toHaveLength(1);
    expect(large.json).not.toContain(data);
    expect(large.json).toBe(
      JSON.stringify(extractInlineBlobs(userMessage([{ type: "image", data }]), 2048).event),
    );
  });

  it("agrees with extractInlineBlobs on any event", () => {
    const block = fc.oneof(
      fc.record({ type: fc.constant("text"), text: fc.string({ maxLength: 40 }) }),
      fc.record({
        type: fc.constant("image"),
        data: fc.oneof(
          fc.string({ minLength: 0, maxLength: 80 }),
          fc.constant(`${BLOB_REF_PREFIX}${"0".repeat(64)}`),
        ),
      }),
    );
    fc.assert(
      fc.property(
        fc.array(block, { maxLength: 6 }),
        fc.integer({ min: 0, max: 120 }),
        (content, threshold) => {
          const event = userMessage(content);
          const extracted = extractInlineBlobs(event, threshold);
          const stored = encodeForStorage(event, threshold);
          expect(stored.json).toBe(JSON.stringify(extracted.event));
          expect(stored.blobs).toEqual(extracted.blobs);
        },
      ),
    );
  });
});

import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { describe, expect, it } from "vitest";
import { modeOf, useTempDirs } from "../../test-support/temp-dir.js";
import { MediaStore } from "./media-store.js";
import { safeFileName } from "./media-temp-file.js";
import { expectStateError, simulatedClock, useGlobalDb } from "./test-support/global-db.js";

const openDb = useGlobalDb();
const tempDir = useTempDirs();

function media() {
  const clock = simulatedClock();
  const tempParent = tempDir();
  return {
    clock,
    tempParent,
    store: new MediaStore(openDb(), { clock: clock.now, tempDir: tempParent }),
  };
}

const bytes = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("MediaStore", () => {
  it("puts, gets, describes, lists and deletes media rows", () => {
    const { store, clock } = media();
    const info = store.put("inbound", "photo.jpg", bytes, { contentType: "image/jpeg" });
    expect(info).toEqual({
      subdir: "inbound",
      id: "photo.jpg",
      contentType: "image/jpeg",
      sizeBytes: bytes.length,
      createdAt: clock.now(),
      updatedAt: clock.now(),
      expiresAt: null,
    });
    expect(store.get("inbound", "photo.jpg")?.data.equals(bytes)).toBe(true);
    expect(store.info("inbound", "photo.jpg")).toEqual(info);
    store.put("inbound", "a.txt", Buffer.from("hi"));
    store.put("outbound", "b.txt", Buffer.from("yo"));
    expect(store.list("inbound").map((m) => m.id)).toEqual(["a.txt", "photo.jpg"]);
    expect(store.delete("inbound", "a.txt")).toBe(true);
    expect(store.get("inbound", "a.txt")).toBeUndefined();
    expectStateError(() => store.put("inbound", "x", "text" as never), "E_INVALID_ARGUMENT");
  });

  it("expires rows after their TTL", () => {
    const { store, clock } = media();
    store.put("tmp", "m", Buffer.from("x"), { ttlMs: 60_000 });
    clock.advance(59_999);
    expect(store.info("tmp", "m")).toBeDefined();
    clock.advance(1);
    expect(store.info("tmp", "m")).toBeUndefined();
    expect(store.list("tmp")).toEqual([]);
  });

  it("streams the bytes in chunks, and fails the stream for a missing row", async () => {
    const { store } = media();
    store.put("inbound", "big.bin", bytes);
    expect((await readAll(store.stream("inbound", "big.bin"))).equals(bytes)).toBe(true);
    await expect(readAll(store.stream("inbound", "nope"))).rejects.toThrow(
      /no media inbound\/nope/,
    );
  });

  it("materializes a private temp file and removes it after use, also when fn throws", async () => {
    const { store, tempParent } = media();
    store.put("inbound", "photo.jpg", bytes);
    const seen = store.withMaterialized("inbound", "photo.jpg", (path) => {
      expect(readFileSync(path).equals(bytes)).toBe(true);
      expect(path.endsWith("/photo.jpg")).toBe(true);
      expect(modeOf(statSync(path))).toBe(0o600);
      expect(modeOf(statSync(dirname(path)))).toBe(0o700);
      writeFileSync(`${path}.thumb`, "derived");
      return path;
    });
    expect(existsSync(dirname(seen))).toBe(false);
    let thrownPath = "";
    expect(() =>
      store.withMaterialized("inbound", "photo.jpg", (path) => {
        thrownPath = path;
        throw new Error("sender failed");
      }),
    ).toThrow("sender failed");
    expect(existsSync(dirname(thrownPath))).toBe(false);
    const asyncPath = await store.withMaterialized("inbound", "photo.jpg", async (path) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(existsSync(path)).toBe(true);
      return path;
    });
    expect(existsSync(dirname(asyncPath))).toBe(false);
    await expect(
      store.withMaterialized("inbound", "photo.jpg", async () => {
        throw new Error("async sender failed");
      }),
    ).rejects.toThrow("async sender failed");
    expect(readdirSync(tempParent)).toEqual([]);
    expectStateError(() => store.withMaterialized("inbound", "missing", () => 1), "E_NOT_FOUND");
  });

  it("names temp files so that no id can leave its directory", () => {
    expect(safeFileName("../../etc/passwd")).toBe("__.._etc_passwd");
    expect(safeFileName(".hidden")).toBe("_hidden");
    expect(safeFileName("voice note (1).ogg")).toBe("voice_note__1_.ogg");
    expect(safeFileName("")).toBe("media");
  });
});

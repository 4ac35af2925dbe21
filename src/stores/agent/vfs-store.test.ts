import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { VFS_CHUNK_BYTES } from "../../vfs/chunks.js";
import { vfsErrnoOf } from "../../vfs/errors.js";
import { VfsStore, type VirtualAgentFs } from "./vfs-store.js";

const tempDir = useTempDirs();

function openVfs(namespace?: string): { db: Database; vfs: VirtualAgentFs; store: VfsStore } {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const store = new VfsStore(db);
  return { db, store, vfs: store.namespace(namespace) };
}

function errnoOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return vfsErrnoOf(error) ?? (isStateError(error) ? error.code : String(error));
  }
  return undefined;
}

function pattern(size: number, seed = 1): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

describe("VirtualAgentFs files", () => {
  it("round-trips text and binary exactly, inline and chunked", () => {
    const { db, vfs } = openVfs();
    const text = "héllo 🌿\r\n\u0000tail";
    vfs.writeFile("/notes.txt", text);
    expect(vfs.readFile("notes.txt", "utf8")).toBe(text);
    for (const size of [0, 1, VFS_CHUNK_BYTES, VFS_CHUNK_BYTES + 1, 3 * VFS_CHUNK_BYTES + 7]) {
      const data = pattern(size, size);
      const stat = vfs.writeFile(`/bin-${size}`, data, { metadata: { type: "bin" } });
      expect(stat).toMatchObject({ path: `/bin-${size}`, kind: "file", size });
      expect(stat.metadata).toEqual({ type: "bin" });
      expect(vfs.readFile(`/bin-${size}`).equals(data)).toBe(true);
      expect(Buffer.concat([...vfs.readChunks(`/bin-${size}`)]).equals(data)).toBe(true);
    }
    const chunkRows = db.prepare("SELECT count(*) AS n FROM vfs_chunks").get();
    expect(chunkRows).toEqual({ n: 2 + 4 });
    db.close();
  });

  it("appends across the inline limit and chunk boundaries", () => {
    const { db, vfs } = openVfs();
    const expected: Buffer[] = [];
    const sizes = [10, VFS_CHUNK_BYTES - 10, 1, VFS_CHUNK_BYTES, 5, 2 * VFS_CHUNK_BYTES + 3, 0, 17];
    sizes.forEach((size, i) => {
      const piece = pattern(size, i + 7);
      expected.push(piece);
      vfs.appendFile("/log.bin", piece);
      const whole = Buffer.concat(expected);
      expect(vfs.stat("/log.bin").size).toBe(whole.length);
      expect(vfs.readFile("/log.bin").equals(whole)).toBe(true);
    });
    db.close();
  });

  it("streams a write from an async iterable and a read as a byte stream", async () => {
    const { db, vfs } = openVfs();
    const data = pattern(VFS_CHUNK_BYTES * 2 + 999);
    async function* pieces() {
      for (let offset = 0; offset < data.length; offset += 70_001) {
        yield data.subarray(offset, offset + 70_001);
      }
    }
    const stat = await vfs.writeFileStream("/big.bin", pieces(), { metadata: { s: 1 } });
    expect(stat).toMatchObject({ size: data.length, metadata: { s: 1 } });
    const read: Buffer[] = [];
    for await (const chunk of vfs.createReadStream("/big.bin")) read.push(chunk as Buffer);
    expect(Buffer.concat(read).equals(data)).toBe(true);
    await vfs.writeFileStream("/small.txt", Readable.from(["a", "b", "c"]));
    expect(vfs.readFile("/small.txt", "utf8")).toBe("abc");
    expect(
      db.prepare("SELECT count(*) AS n FROM vfs_entries WHERE kind = 'staging'").get(),
    ).toEqual({ n: 0 });
    db.close();
  });

  it("leaves nothing behind when a streamed write fails", async () => {
    const { db, vfs } = openVfs();
    async function* failing() {
      yield pattern(VFS_CHUNK_BYTES * 2);
      throw new Error("source broke");
    }
    await expect(vfs.writeFileStream("/x", failing())).rejects.toThrow("source broke");
    await expect(vfs.writeFileStream("/missing/x", ["data"])).rejects.toMatchObject({
      code: "E_NOT_FOUND",
    });
    expect(db.prepare("SELECT count(*) AS n FROM vfs_entries").get()).toEqual({ n: 0 });
    expect(db.prepare("SELECT count(*) AS n FROM vfs_chunks").get()).toEqual({ n: 0 });
    db.close();
  });

  it("stages files for a later commit; a swept stage cannot be committed", async () => {
    const { db, vfs, store } = openVfs();
    const staged = await vfs.stage([Buffer.from("staged bytes")]);
    expect(vfs.readdir("/")).toEqual([]);
    expect(store.namespaces()).toEqual([]);
    vfs.commitStaged("/kept.txt", staged, { metadata: { from: "stage" } });
    expect(vfs.stat("/kept.txt")).toMatchObject({ size: 12, metadata: { from: "stage" } });
    const orphan = await vfs.stage([pattern(VFS_CHUNK_BYTES + 1)]);
    expect(store.sweepStaging(Date.now() - 60_000)).toBe(0);
    expect(store.sweepStaging(Date.now() + 1)).toBe(1);
    expect(errnoOf(() => vfs.commitStaged("/lost", orphan))).toBe("E_CONFLICT");
    expect(db.prepare("SELECT count(*) AS n FROM vfs_chunks").get()).toEqual({ n: 0 });
    db.close();
  });

  it("refuses file operations on directories, the root and trailing slashes", () => {
    const { db, vfs } = openVfs();
    vfs.mkdir("/d");
    vfs.writeFile("/f", "x");
    expect(errnoOf(() => vfs.writeFile("/d", "x"))).toBe("EISDIR");
    expect(errnoOf(() => vfs.readFile("/d"))).toBe("EISDIR");
    expect(errnoOf(() => vfs.readFile("/nope"))).toBe("ENOENT");
    expect(errnoOf(() => vfs.readFile("/f/x"))).toBe("ENOTDIR");
    expect(errnoOf(() => vfs.writeFile("/m/x", "x"))).toBe("ENOENT");
    expect(errnoOf(() => vfs.writeFile("/f/", "x"))).toBe("E_PATH");
    expect(errnoOf(() => vfs.readFile("/"))).toBe("E_PATH");
    expect(errnoOf(() => vfs.stat("/f/"))).toBe("ENOTDIR");
    expect(vfs.exists("/f/")).toBe(false);
    expect(vfs.exists("/d/")).toBe(true);
    vfs.writeFile("/m/n/x", "deep", { parents: true });
    expect(vfs.readdir("/m")).toEqual([{ name: "n", kind: "directory" }]);
    db.close();
  });
});

describe("VirtualAgentFs directories", () => {
  it("mkdir -p, readdir with kinds, stat", () => {
    const { db, vfs } = openVfs();
    const before = Date.now();
    vfs.mkdir("/a/b/c");
    vfs.mkdir("a/b/c/");
    vfs.writeFile("/a/z.txt", "z");
    vfs.writeFile("/a/b/y.txt", "yy");
    expect(vfs.readdir("/a")).toEqual([
      { name: "b", kind: "directory" },
      { name: "z.txt", kind: "file" },
    ]);
    expect(vfs.readdir("/")).toEqual([{ name: "a", kind: "directory" }]);
    const stat = vfs.stat("/a/b/y.txt");
    expect(stat).toMatchObject({ name: "y.txt", kind: "file", size: 2, metadata: {} });
    expect(stat.updatedAt).toBeGreaterThanOrEqual(before);
    expect(vfs.stat("/")).toMatchObject({ path: "/", kind: "directory" });
    expect(errnoOf(() => vfs.mkdir("/a", { recursive: false }))).toBe("EEXIST");
    expect(errnoOf(() => vfs.mkdir("/q/r", { recursive: false }))).toBe("ENOENT");
    expect(errnoOf(() => vfs.mkdir("/a/z.txt/k"))).toBe("ENOTDIR");
    expect(errnoOf(() => vfs.mkdir("/a/z.txt"))).toBe("EEXIST");
    expect(vfs.list("/a").map((s) => s.path)).toEqual(["/a/b", "/a/b/c", "/a/b/y.txt", "/a/z.txt"]);
    db.close();
  });

  it("renames whole directories atomically, chunks untouched", () => {
    const { db, vfs } = openVfs();
    const big = pattern(VFS_CHUNK_BYTES * 3);
    vfs.writeFile("/src/deep/big.bin", big, { parents: true });
    vfs.writeFile("/src/a.txt", "a");
    const chunkIds = db.prepare("SELECT DISTINCT entry_id FROM vfs_chunks").all();
    vfs.mkdir("/dst");
    vfs.rename("/src", "/dst/moved");
    expect(vfs.exists("/src")).toBe(false);
    expect(vfs.list("/dst").map((s) => s.path)).toEqual([
      "/dst/moved",
      "/dst/moved/a.txt",
      "/dst/moved/deep",
      "/dst/moved/deep/big.bin",
    ]);
    expect(vfs.readFile("/dst/moved/deep/big.bin").equals(big)).toBe(true);
    expect(vfs.readdir("/dst/moved/deep")).toEqual([{ name: "big.bin", kind: "file" }]);
    expect(db.prepare("SELECT DISTINCT entry_id FROM vfs_chunks").all()).toEqual(chunkIds);
    expect(errnoOf(() => vfs.rename("/dst", "/dst/moved/inner"))).toBe("EINVAL");
    vfs.mkdir("/full/x");
    expect(errnoOf(() => vfs.rename("/dst", "/full"))).toBe("ENOTEMPTY");
    expect(errnoOf(() => vfs.rename("/", "/x"))).toBe("E_PATH");
    db.close();
  });

  it("rm recursive, force; copy files and trees; clear", () => {
    const { db, vfs, store } = openVfs("work");
    vfs.writeFile("/t/a/1.bin", pattern(VFS_CHUNK_BYTES + 5), { parents: true });
    vfs.writeFile("/t/b.txt", "b");
    expect(errnoOf(() => vfs.rm("/t"))).toBe("EISDIR");
    expect(errnoOf(() => vfs.copy("/t", "/t/inside"))).toBe("EINVAL");
    vfs.copy("/t", "/copy");
    vfs.copy("/t/b.txt", "/copy/b.txt", { overwrite: true });
    expect(errnoOf(() => vfs.copy("/t/b.txt", "/copy/b.txt"))).toBe("EEXIST");
    expect(vfs.readFile("/copy/a/1.bin").equals(vfs.readFile("/t/a/1.bin"))).toBe(true);
    expect(vfs.rm("/t", { recursive: true })).toBe(4);
    expect(vfs.readFile("/copy/a/1.bin").length).toBe(VFS_CHUNK_BYTES + 5);
    expect(vfs.rm("/t", { force: true })).toBe(0);
    expect(errnoOf(() => vfs.rm("/t"))).toBe("ENOENT");
    // Below a file nothing exists: force ignores it, as Node 24's rmSync and `rm -f` do.
    expect(vfs.rm("/copy/b.txt/a/a", { recursive: true, force: true })).toBe(0);
    expect(errnoOf(() => vfs.rm("/copy/b.txt/a"))).toBe("ENOTDIR");
    expect(store.namespaces()).toEqual([
      { namespace: "work", entries: 4, bytes: VFS_CHUNK_BYTES + 6 },
    ]);
    expect(store.namespace("other").readdir("/")).toEqual([]);
    expect(vfs.clear()).toBe(4);
    expect(db.prepare("SELECT count(*) AS n FROM vfs_chunks").get()).toEqual({ n: 0 });
    db.close();
  });

  it("batches many writes into one transaction and rolls all back on failure", () => {
    const { db, vfs } = openVfs();
    vfs.batch(() => {
      for (let i = 0; i < 100; i++) vfs.writeFile(`/f${i}`, `${i}`);
    });
    expect(vfs.readdir("/")).toHaveLength(100);
    expect(() =>
      vfs.batch(() => {
        vfs.writeFile("/g", "x");
        vfs.readFile("/missing");
      }),
    ).toThrow();
    expect(vfs.exists("/g")).toBe(false);
    db.close();
  });

  it("creates a new file in one statement only where no check could refuse or replace", () => {
    const { db, store, vfs } = openVfs();
    const row = (ns: string, path: string) =>
      db
        .prepare(
          "SELECT parent, kind, size_bytes, content_blob FROM vfs_entries WHERE namespace = ? AND path = ?",
        )
        .get(ns, path) as { parent: string; kind: string; content_blob: Uint8Array };
    vfs.mkdir("/d");
    vfs.writeFile("/f", "file");
    store.namespace("other").writeFile("/d", "a file in another namespace");
    vfs.batch(() => {
      const stat = vfs.writeFile("/d/a", "one");
      expect(stat).toEqual(vfs.stat("/d/a"));
      expect(row("scratch", "/d/a")).toMatchObject({ parent: "/d", kind: "file", size_bytes: 3 });
      // Refusals inside a batch leave the batch's earlier writes and the tree as they were.
      expect(errnoOf(() => vfs.writeFile("/d", "x"))).toBe("EISDIR");
      expect(errnoOf(() => vfs.writeFile("/f/x", "x"))).toBe("ENOTDIR");
      expect(errnoOf(() => vfs.writeFile("/m/x", "x"))).toBe("ENOENT");
      vfs.writeFile("/d/a", "two");
      expect(Buffer.from(row("scratch", "/d/a").content_blob).toString()).toBe("two");
      vfs.writeFile("/top", "at the root");
    });
    expect(vfs.readFile("/d/a", "utf8")).toBe("two");
    expect(row("scratch", "/top").parent).toBe("/");
    expect(vfs.readdir("/").map((e) => e.name)).toEqual(["d", "f", "top"]);
    expect(vfs.readdir("/d")).toEqual([{ name: "a", kind: "file" }]);
    expect(store.namespace("other").readFile("/d", "utf8")).toBe("a file in another namespace");
    expect(db.prepare("SELECT count(*) AS n FROM vfs_entries").get()).toEqual({ n: 5 });
    db.close();
  });

  it("fingerprints change with any edit below a directory", () => {
    const { db, vfs } = openVfs();
    vfs.writeFile("/p/a", "1", { parents: true });
    const first = vfs.fingerprint("/p");
    expect(vfs.fingerprint("/p")).toBe(first);
    vfs.writeFile("/p/a", "2");
    expect(vfs.fingerprint("/p")).not.toBe(first);
    db.close();
  });

  it("validates namespaces and options", () => {
    const { db, store, vfs } = openVfs();
    expect(() => store.namespace("../x")).toThrow(/namespace/);
    expect(() => store.namespace("")).toThrow(/namespace/);
    expect(() => vfs.rm("/x", { recursiv: true } as never)).toThrow(/Unknown option/);
    expect(() => vfs.writeFile("/x", "y", { metadata: [] as never })).toThrow(/plain JSON/);
    expect(() => vfs.writeFile("/x", 42 as never)).toThrow(TypeError);
    db.close();
  });
});

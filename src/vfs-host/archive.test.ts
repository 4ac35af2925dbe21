import { execFileSync } from "node:child_process";
import {
  createReadStream,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { gzipSync } from "node:zlib";
import { Header } from "tar";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../db/database.js";
import { VfsStore, type VirtualAgentFs } from "../stores/agent/vfs-store.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { VFS_CHUNK_BYTES } from "../vfs/chunks.js";
import { decodeTar, encodeTar } from "../vfs/tar.js";
import { exportTar, exportToDirectory, importFromDirectory, importTar } from "./archive.js";

const tempDir = useTempDirs();
const LONG = `${"long-directory-name/".repeat(6)}${"é".repeat(40)}.txt`;

function openStore(): { db: Database; store: VfsStore; close: () => void } {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  return { db, store: new VfsStore(db), close: () => db.close() };
}

function fill(vfs: VirtualAgentFs): void {
  vfs.writeFile("/a.txt", "alpha\n");
  vfs.writeFile("/empty", "");
  vfs.mkdir("/dir/empty-dir");
  vfs.writeFile("/dir/bin", Buffer.from([0, 1, 2, 255, 254, 0]));
  vfs.writeFile("/dir/big", Buffer.alloc(VFS_CHUNK_BYTES * 2 + 3, 0xab));
  vfs.writeFile("/ünï code/ça va.txt", "ok", { parents: true });
  vfs.writeFile(`/${LONG}`, "long name", { parents: true });
}

function tree(vfs: VirtualAgentFs, base = "/"): string[] {
  const prefix = base === "/" ? "" : base;
  return vfs
    .list(base)
    .map(
      (s) =>
        `${s.kind} ${s.path.slice(prefix.length)} ${s.kind === "file" ? vfs.readFile(s.path).toString("hex") : ""}`,
    );
}

async function streamOf(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  return buffer(Readable.from(chunks));
}

describe("export and import", () => {
  it("round-trips a namespace through a host directory", async () => {
    const { store, close } = openStore();
    const source = store.namespace("src");
    fill(source);
    const dir = join(tempDir(), "out");
    expect(exportToDirectory(source, dir)).toMatchObject({ files: 6, directories: 9 });
    expect(readFileSync(join(dir, "dir", "bin"))).toEqual(Buffer.from([0, 1, 2, 255, 254, 0]));
    const copy = store.namespace("copy");
    const report = await importFromDirectory(copy, dir, { path: "/restored" });
    expect(report.created).toContain("/restored/a.txt");
    expect(tree(copy, "/restored")).toEqual(tree(source));
    expect(() => exportToDirectory(source, dir)).toThrow(/not an empty directory/);
    close();
  });

  it("round-trips through a tar stream, long and unicode names included", async () => {
    const { store, close } = openStore();
    const source = store.namespace("src");
    fill(source);
    const tar = await buffer(exportTar(source));
    const copy = store.namespace("copy");
    await importTar(copy, Readable.from([tar]));
    expect(tree(copy)).toEqual(tree(source));
    // Pieces of every size reach the decoder the same way.
    const again = store.namespace("again");
    const pieces = Array.from({ length: Math.ceil(tar.length / 777) }, (_, i) =>
      tar.subarray(i * 777, (i + 1) * 777),
    );
    await importTar(again, pieces);
    expect(tree(again)).toEqual(tree(source));
    close();
  });

  it("interoperates with GNU tar both ways", async () => {
    const { store, close } = openStore();
    const source = store.namespace("src");
    fill(source);
    const archive = join(tempDir(), "vfs.tar");
    writeFileSync(archive, await buffer(exportTar(source, { path: "/dir" })));
    const listed = execFileSync("tar", ["-tf", archive], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean);
    expect(listed.sort()).toEqual(["big", "bin", "empty-dir/"]);
    const host = tempDir();
    mkdirSync(join(host, "x", LONG.split("/").slice(0, -1).join("/")), { recursive: true });
    writeFileSync(join(host, "x", LONG), "from gnu tar");
    writeFileSync(join(host, "x", "plain.txt"), "plain");
    const gnu = join(tempDir(), "gnu.tar");
    execFileSync("tar", ["-cf", gnu, "-C", join(host, "x"), "."]);
    const copy = store.namespace("copy");
    await importTar(copy, createReadStream(gnu));
    expect(copy.readFile(`/${LONG}`, "utf8")).toBe("from gnu tar");
    expect(copy.readFile("/plain.txt", "utf8")).toBe("plain");
    close();
  });

  it("refuses hostile tar members and leaves the VFS and staging untouched", async () => {
    const { db, store, close } = openStore();
    const vfs = store.namespace("target");
    vfs.writeFile("/keep", "keep");
    const evil = (name: string) =>
      encodeTar([
        { name: "ok.txt", kind: "file", size: 2, mtimeMs: 0, body: () => [Buffer.from("ok")] },
        { name, kind: "file", size: 1, mtimeMs: 0, body: () => [Buffer.from("x")] },
      ]);
    // A NUL in a ustar name field just ends the name; in a pax path record it must be refused.
    const hostile = ["../../etc/passwd", "a/../../b", `${"n".repeat(120)}\u0000y`, "x\ny"];
    for (const name of [
      ...hostile,
      "\uff0e\uff0e/p",
      "a\\..\\b",
      `${"d/".repeat(60)}../`.repeat(40),
    ]) {
      await expect(importTar(vfs, evil(name))).rejects.toMatchObject({ code: "E_PATH" });
    }
    const host = tempDir();
    symlinkSync("/etc/passwd", join(host, "link"));
    const linkTar = join(tempDir(), "link.tar");
    execFileSync("tar", ["-cf", linkTar, "-C", host, "link"]);
    await expect(importTar(vfs, createReadStream(linkTar))).rejects.toMatchObject({
      code: "E_PATH",
      message: /symbolic link/,
    });
    const good = await streamOf(evil("fine.txt"));
    const corrupt = Buffer.from(good);
    corrupt[10] = 0x41;
    await expect(importTar(vfs, [corrupt])).rejects.toMatchObject({ code: "E_CORRUPT_SOURCE" });
    await expect(importTar(vfs, [good.subarray(0, 700)])).rejects.toMatchObject({
      code: "E_CORRUPT_SOURCE",
    });
    expect(vfs.list("/").map((s) => s.path)).toEqual(["/keep"]);
    expect(
      db.prepare("SELECT count(*) AS n FROM vfs_entries WHERE kind = 'staging'").get(),
    ).toEqual({ n: 0 });
    close();
  });

  it("refuses an oversized pax header before buffering it", async () => {
    const { store, close } = openStore();
    const block = Buffer.alloc(512);
    block.write("PaxHeader/x", 0);
    block.write("0000600\0", 100);
    block.write(`${(64 * 1024 * 1024).toString(8).padStart(11, "0")}\0`, 124);
    block.write("x", 156);
    block.write("ustar\u000000", 257);
    block.fill(0x20, 148, 156);
    const sum = block.reduce((a, b) => a + b, 0);
    block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    await expect(importTar(store.namespace(), [block])).rejects.toMatchObject({
      code: "E_CORRUPT_SOURCE",
      message: /extended header/,
    });
    close();
  });

  it("imports archives written by the system tar, refusing one that holds a symlink", async () => {
    const { store, close } = openStore();
    const host = tempDir();
    mkdirSync(join(host, LONG.split("/").slice(0, -1).join("/")), { recursive: true });
    writeFileSync(join(host, LONG), "long");
    writeFileSync(join(host, "ünï çødé.txt"), "unicode");
    mkdirSync(join(host, "empty-dir"));
    symlinkSync("/etc/passwd", join(host, "link"));
    for (const format of ["gnu", "pax"]) {
      const withLink = join(tempDir(), `${format}.tar`);
      execFileSync("tar", [`--format=${format}`, "-cf", withLink, "-C", host, "."]);
      const vfs = store.namespace(format);
      vfs.writeFile("/keep", "keep");
      await expect(importTar(vfs, createReadStream(withLink))).rejects.toMatchObject({
        code: "E_PATH",
        message: /"\.\/link" is a symbolic link/,
      });
      expect(vfs.list("/").map((s) => s.path)).toEqual(["/keep"]);
      const withoutLink = join(tempDir(), `${format}-no-link.tar`);
      const args = [`--format=${format}`, "--exclude=./link", "-cf", withoutLink, "-C", host, "."];
      execFileSync("tar", args);
      await importTar(vfs, createReadStream(withoutLink));
      expect(vfs.readFile(`/${LONG}`, "utf8")).toBe("long");
      expect(vfs.readFile("/ünï çødé.txt", "utf8")).toBe("unicode");
      expect(vfs.stat("/empty-dir").kind).toBe("directory");
      expect(vfs.exists("/link")).toBe(false);
    }
    close();
  });

  it("refuses hard links, FIFOs and entry types the VFS does not have", async () => {
    const { store, close } = openStore();
    const vfs = store.namespace();
    const host = tempDir();
    writeFileSync(join(host, "a"), "a");
    linkSync(join(host, "a"), join(host, "b"));
    const hard = join(tempDir(), "hard.tar");
    execFileSync("tar", ["-cf", hard, "-C", host, "a", "b"]);
    await expect(importTar(vfs, createReadStream(hard))).rejects.toMatchObject({
      code: "E_PATH",
      message: /hard link/,
    });
    execFileSync("mkfifo", [join(host, "fifo")]);
    const fifo = join(tempDir(), "fifo.tar");
    execFileSync("tar", ["-cf", fifo, "-C", host, "fifo"]);
    await expect(importTar(vfs, createReadStream(fifo))).rejects.toMatchObject({
      code: "E_INVALID_ARGUMENT",
      message: /type FIFO/,
    });
    const volume = new Header({ path: "label", type: "TapeVolumeHeader", size: 0, mode: 0o600 });
    volume.encode();
    const labelled = Buffer.concat([volume.block as Buffer, await streamOf(encodeTar([]))]);
    await expect(importTar(vfs, [labelled])).rejects.toMatchObject({
      code: "E_INVALID_ARGUMENT",
    });
    expect(vfs.list("/")).toEqual([]);
    close();
  });

  it("refuses archives cut at an entry boundary, empty input and gzip; takes an empty archive", async () => {
    const { store, close } = openStore();
    const vfs = store.namespace();
    const whole = await streamOf(
      encodeTar([{ name: "f", kind: "file", size: 1, mtimeMs: 0, body: () => [Buffer.from("x")] }]),
    );
    // Header and body of "f" whole, the end-of-archive marker missing.
    const cut = whole.subarray(0, 1024);
    for (const source of [[cut], [], [gzipSync(whole)]]) {
      await expect(importTar(vfs, source)).rejects.toMatchObject({ code: "E_CORRUPT_SOURCE" });
    }
    const empty = await buffer(exportTar(store.namespace("nothing")));
    expect(empty).toEqual(Buffer.alloc(1024));
    expect(await importTar(vfs, [empty])).toMatchObject({ created: [], updated: [] });
    close();
  });

  it("skips the bodies a reader leaves unread", async () => {
    const members = [5, VFS_CHUNK_BYTES * 2 + 1, 0, 700].map((size, i) => ({
      name: `m${i}`,
      kind: "file" as const,
      size,
      mtimeMs: 0,
      body: () => [Buffer.alloc(size, i)],
    }));
    const tar = await streamOf(encodeTar(members));
    const seen: string[] = [];
    for await (const member of decodeTar(Readable.from([tar]))) {
      if (member.name === "m1") {
        for await (const chunk of member.body) {
          seen.push(`m1 starts with ${chunk[0]}`);
          break;
        }
      }
      seen.push(`${member.name} ${member.size}`);
    }
    expect(seen).toEqual([
      "m0 5",
      "m1 starts with 1",
      `m1 ${VFS_CHUNK_BYTES * 2 + 1}`,
      "m2 0",
      "m3 700",
    ]);
  });

  it("imports with replace, refuses symlinks that leave the source dir, exports one file", async () => {
    const { store, close } = openStore();
    const vfs = store.namespace();
    vfs.writeFile("/t/old.txt", "old", { parents: true });
    const host = tempDir();
    writeFileSync(join(host, "new.txt"), "new");
    const report = await importFromDirectory(vfs, host, { path: "/t", replace: true });
    expect(report).toMatchObject({ created: ["/t/new.txt"], deleted: ["/t/old.txt"] });
    expect(vfs.readdir("/t").map((e) => e.name)).toEqual(["new.txt"]);
    symlinkSync("/etc", join(host, "etc"));
    await expect(importFromDirectory(vfs, host, { path: "/t" })).rejects.toMatchObject({
      code: "E_PATH",
    });
    const out = join(tempDir(), "one");
    expect(exportToDirectory(vfs, out, { path: "/t/new.txt" })).toEqual({
      files: 1,
      directories: 0,
      bytes: 3,
    });
    expect(readdirSync(out)).toEqual(["new.txt"]);
    close();
  });
});

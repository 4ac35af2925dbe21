// Scratch filesystem: writing and reading 10,000 small files and one 100 MB file through
// VirtualAgentFs, against the same work on the real disk (node:fs in a temp dir on the same
// filesystem) in the same run. Rounds alternate VFS and disk, so machine noise hits both alike.
import { createReadStream, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStateHome } from "../dist/index.js";
import { VfsStore } from "../dist/stores/agent/vfs-store.js";
import {
  fmtBytes,
  fmtCount,
  fmtRatio,
  median,
  met,
  prng,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const FILES = QUICK ? 1_000 : 10_000;
const PER_DIR = 100;
const BIG = (QUICK ? 10 : 100) * 1024 * 1024;
const ROUNDS = QUICK ? 2 : 7;
const SMALL_WRITE_TARGET = 1.0;
const BIG_READ_TARGET = 0.5;

/** Small files of 200 B to 4 KiB in directories of 100, the same bytes for VFS and disk. */
function smallFiles() {
  const rand = prng(11);
  return Array.from({ length: FILES }, (_, i) => {
    const size = 200 + Math.floor(rand() * 3900);
    const data = Buffer.alloc(size, 97 + (i % 26));
    return {
      dir: `d${Math.floor(i / PER_DIR)}`,
      path: `d${Math.floor(i / PER_DIR)}/f${i}.txt`,
      data,
    };
  });
}

async function drain(stream) {
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.length;
  return bytes;
}

/** Median ms of each case over interleaved rounds; `setup(round)` runs untimed before each. */
async function rounds(cases) {
  const times = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, { setup, fn }] of Object.entries(cases)) {
      const context = setup ? await setup(round) : undefined;
      const t0 = process.hrtime.bigint();
      await fn(context, round);
      times[name].push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([name, ms]) => [name, median(ms)]));
}

/** Write cases; every VFS round starts from an empty namespace and an empty WAL. */
function smallWriteCases(db, vfs, root, files, walPages) {
  const dirs = [...new Set(files.map((f) => f.dir))];
  const freshVfs = () => {
    vfs.clear();
    db.checkpoint("TRUNCATE");
  };
  const writeAll = () => {
    for (const d of dirs) vfs.mkdir(d);
    for (const f of files) vfs.writeFile(f.path, f.data);
  };
  return {
    vfsBatch: { setup: freshVfs, fn: () => vfs.batch(writeAll) },
    // The same transaction with the WAL checkpoint its commit triggers moved out of the timing.
    vfsDeferred: {
      setup: () => {
        freshVfs();
        db.exec("PRAGMA wal_autocheckpoint = 0");
      },
      fn: () => {
        vfs.batch(writeAll);
        db.exec("PRAGMA wal_autocheckpoint = 1000");
      },
    },
    // The checkpoint alone, after the same transaction: its time, and how many WAL pages it copies.
    vfsCheckpoint: {
      setup: () => {
        freshVfs();
        db.exec("PRAGMA wal_autocheckpoint = 0");
        vfs.batch(writeAll);
      },
      fn: () => {
        walPages.push(db.checkpoint("PASSIVE").walFrames);
        db.exec("PRAGMA wal_autocheckpoint = 1000");
      },
    },
    vfsEach: { setup: freshVfs, fn: writeAll },
    // A new directory per round, old ones left in place: deleting 10,000 files just before a
    // round slows the next round's writes (journal, discard), which would flatter the VFS.
    disk: {
      setup: (round) => {
        mkdirSync(join(root, `r${round}`), { recursive: true });
        return join(root, `r${round}`);
      },
      fn: (top) => {
        for (const d of dirs) mkdirSync(join(top, d));
        for (const f of files) writeFileSync(join(top, f.path), f.data);
      },
    },
  };
}

async function measureSmall(home, store, dir, files) {
  const db = home.agent("bench").db;
  const vfs = store.namespace("small");
  const root = join(dir, "small");
  progress(`vfs: ${fmtCount(FILES)} small files × ${ROUNDS} rounds`);
  const walPages = [];
  const write = await rounds(smallWriteCases(db, vfs, root, files, walPages));
  db.checkpoint("TRUNCATE");
  const read = await rounds({
    vfs: {
      fn: () => {
        for (const f of files) vfs.readFile(f.path);
      },
    },
    disk: {
      fn: () => {
        for (const f of files) readFileSync(join(root, "r0", f.path));
      },
    },
  });
  return { write, read, walPages: median(walPages), pageSize: db.pragma("page_size") };
}

async function measureBig(home, store, dir) {
  const data = Buffer.alloc(BIG);
  for (let i = 0; i < BIG; i += 4) data.writeUInt32LE((i * 2654435761) >>> 0, i);
  const vfs = store.namespace("big");
  const file = join(dir, "big.bin");
  progress(`vfs: one ${fmtBytes(BIG)} file × ${ROUNDS} rounds`);
  const clearVfs = () => {
    vfs.clear();
    home.agent("bench").db.checkpoint("TRUNCATE");
  };
  const write = await rounds({
    vfs: { setup: clearVfs, fn: () => vfs.writeFile("/big.bin", data) },
    vfsStream: {
      setup: clearVfs,
      fn: () => vfs.writeFileStream("/big.bin", chunksOf(data)),
    },
    disk: { setup: (round) => `${file}.${round}`, fn: (path) => writeFileSync(path, data) },
  });
  home.agent("bench").db.checkpoint("TRUNCATE");
  const read = await rounds({
    vfs: { fn: () => vfs.readFile("/big.bin") },
    disk: { fn: () => readFileSync(`${file}.0`) },
    // What a connection-level PRAGMA mmap_size (not set by the library today) would change.
    vfsMmap: {
      setup: () => home.agent("bench").db.exec(`PRAGMA mmap_size = ${256 * 1024 * 1024}`),
      fn: () => {
        vfs.readFile("/big.bin");
        home.agent("bench").db.exec("PRAGMA mmap_size = 0");
      },
    },
    vfsStream: { fn: () => drain(vfs.createReadStream("/big.bin")) },
    // What any whole-file read pays first: a fresh buffer of the file's size, faulted in page by page.
    freshBuffer: { fn: () => touchPages(Buffer.allocUnsafe(BIG)) },
    diskStream: {
      fn: () => drain(createReadStream(`${file}.0`, { highWaterMark: 256 * 1024 })),
    },
  });
  return { write, read };
}

/** Writes one byte per 4 KiB page, so that every page of `buffer` is faulted in. */
function touchPages(buffer) {
  for (let offset = 0; offset < buffer.length; offset += 4096) buffer[offset] = 1;
  return buffer;
}

function* chunksOf(data) {
  for (let offset = 0; offset < data.length; offset += 64 * 1024) {
    yield data.subarray(offset, offset + 64 * 1024);
  }
}

const mbps = (bytes, ms) => `${fmtCount(bytes / 1024 / 1024 / (ms / 1000))} MB/s`;
const perSec = (n, ms) => `${fmtCount(n / (ms / 1000))} files/s`;

/** [label, VFS ms, disk ms, unit] per table row. */
function rowSpecs(small, big) {
  const files = (label, vfsMs, diskMs) => [label, vfsMs, diskMs, "files"];
  const bytes = (label, vfsMs, diskMs) => [label, vfsMs, diskMs, "bytes"];
  return [
    files("write 10k small files, one transaction (batch)", small.write.vfsBatch, small.write.disk),
    files(
      "write 10k small files, one transaction, WAL checkpoint not timed",
      small.write.vfsDeferred,
      small.write.disk,
    ),
    files("write 10k small files, one transaction each", small.write.vfsEach, small.write.disk),
    files("read 10k small files (readFile each)", small.read.vfs, small.read.disk),
    bytes("write 100 MB file (writeFile Buffer)", big.write.vfs, big.write.disk),
    bytes(
      "write 100 MB file (writeFileStream, 64 KiB pieces)",
      big.write.vfsStream,
      big.write.disk,
    ),
    bytes("read 100 MB file (readFile)", big.read.vfs, big.read.disk),
    bytes(
      "read 100 MB file (readFile), PRAGMA mmap_size = 256 MiB",
      big.read.vfsMmap,
      big.read.disk,
    ),
    bytes("read 100 MB file (stream)", big.read.vfsStream, big.read.diskStream),
  ];
}

function render(small, big, dbBytes) {
  const rows = rowSpecs(small, big).map(([label, vfsMs, diskMs, unit]) => [
    QUICK ? label.replace("10k", fmtCount(FILES)).replace("100 MB", fmtBytes(BIG)) : label,
    `${vfsMs.toFixed(1)} ms`,
    `${diskMs.toFixed(1)} ms`,
    unit === "files" ? perSec(FILES, vfsMs) : mbps(BIG, vfsMs),
    unit === "files" ? perSec(FILES, diskMs) : mbps(BIG, diskMs),
    fmtRatio(diskMs / vfsMs),
  ]);
  return [
    "## Scratch filesystem (VFS)",
    "",
    `VirtualAgentFs on the agent database against node:fs on a temp dir of the same filesystem.`,
    `${fmtCount(FILES)} small files (${fmtBytes(small.bytes)} in all, 200 B–4 KiB, ${PER_DIR} per directory);`,
    `one ${fmtBytes(BIG)} file (256 KiB chunks in SQLite). Median of ${ROUNDS} interleaved rounds; page`,
    "cache warm for both. **VFS ÷ disk** = disk time ÷ VFS time (1.00 = as fast as the disk, higher is",
    "faster). Neither side fsyncs per file (WAL with synchronous=NORMAL; `writeFileSync` without fsync),",
    "but a commit that grows the WAL past 1,000 pages runs a checkpoint (copy into the database file,",
    "two fsyncs) before it returns, while the kernel writes the disk files back later, untimed: the",
    "second row shows the transaction alone. Targets use the first row, checkpoint included.",
    `The batch leaves ${fmtCount(small.walPages)} WAL pages (${(small.walPages / FILES).toFixed(2)} per file,`,
    `${fmtBytes(small.walPages * small.pageSize)} for ${fmtBytes(small.bytes)} of file bytes); checkpointing them alone takes ${small.write.vfsCheckpoint.toFixed(1)} ms.`,
    `Database at the end: ${fmtBytes(dbBytes)}.`,
    "",
    table(["operation", "VFS", "disk", "VFS rate", "disk rate", "VFS ÷ disk"], rows),
    "",
    `A whole-file read first needs a fresh buffer of the file's size: allocating one of ${fmtBytes(BIG)} and`,
    `faulting in its pages alone takes ${big.read.freshBuffer.toFixed(1)} ms here, a cost \`readFile\` and \`readFileSync\``,
    "both pay; the VFS adds its chunk reads (about the stream row) and one copy.",
  ].join("\n");
}

export async function run() {
  return withTempDir("vfs", async (dir) => {
    const home = openStateHome({ home: join(dir, "home") });
    const store = new VfsStore(home.agent("bench").db);
    const files = smallFiles();
    const small = {
      ...(await measureSmall(home, store, dir, files)),
      bytes: files.reduce((n, f) => n + f.data.length, 0),
    };
    const big = await measureBig(home, store, dir);
    const dbBytes = home.agent("bench").db.sizeBytes();
    home.close();
    const smallRatio = small.write.disk / small.write.vfsBatch;
    const bigRatio = big.read.disk / big.read.vfs;
    const streamRatio = big.read.diskStream / big.read.vfsStream;
    const targets = [
      {
        name: `VFS write of ${fmtCount(FILES)} small files (one transaction) ≥ disk speed`,
        value: `${fmtRatio(smallRatio)} × disk (checkpoint not timed: ${fmtRatio(small.write.disk / small.write.vfsDeferred)} ×)`,
        met: smallRatio >= SMALL_WRITE_TARGET,
      },
      {
        name: `VFS readFile of a ${fmtBytes(BIG)} file ≥ 50% of readFileSync throughput`,
        value: `${fmtRatio(bigRatio)} × disk`,
        met: bigRatio >= BIG_READ_TARGET,
      },
      {
        name: `VFS read stream of a ${fmtBytes(BIG)} file ≥ 50% of fs.createReadStream throughput`,
        value: `${fmtRatio(streamRatio)} × disk`,
        met: streamRatio >= BIG_READ_TARGET,
      },
    ];
    const markdown = [
      render(small, big, dbBytes),
      "",
      ...targets.map((t) => `- ${t.name}: ${t.value} ${met(t.met)}`),
    ].join("\n");
    return { name: "vfs", markdown, targets };
  });
}

await runIfMain(import.meta.url, run);

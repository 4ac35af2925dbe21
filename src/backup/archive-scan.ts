import { createHash, type Hash } from "node:crypto";
import {
  closeSync,
  createReadStream,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { Parser, type ReadEntry } from "tar";
import { DIR_MODE, FILE_MODE } from "../db/files.js";
import { entryPathProblem, MANIFEST_ENTRY } from "./manifest.js";

/** A manifest is a few hundred bytes per entry; anything far larger is not one of ours. */
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;
const MAX_DAMAGE_MESSAGES = 5;
const REGULAR_FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"]);
const UNPLACEABLE = new Set(["ENOTDIR", "EEXIST", "EISDIR", "ENAMETOOLONG"]);

export interface ScannedEntry {
  /** The entry name exactly as the archive spells it. */
  path: string;
  type: string;
  bytes: number;
  /** SHA-256 of the body; null when the body was refused or cut off. */
  sha256: string | null;
  /** Why the entry itself is unacceptable (path, type, duplicate), or null. */
  problem: string | null;
  /** Where the body was written, when it was staged. */
  stagedPath: string | null;
}

export interface ArchiveScan {
  compressed: boolean;
  entries: ScannedEntry[];
  manifestText: string | null;
  /** Problems of the archive as a whole (truncation, bad checksums), in the order found. */
  damage: string[];
}

export interface ScanOptions {
  /** Private directory that staged bodies are written below, at their entry names. */
  stagingDir: string;
  /** Which acceptable entries to write out; the others are only hashed. */
  stage: (path: string) => boolean;
  /** fsync each staged file (restore needs that; verify does not). */
  durable?: boolean;
  /** Called as soon as an entry's body is completely staged. */
  onStaged?: (entry: ScannedEntry) => void;
}

function typeProblem(entry: ReadEntry): string | null {
  if (REGULAR_FILE_TYPES.has(entry.type)) return null;
  if (entry.type === "SymbolicLink" || entry.type === "Link") {
    const kind = entry.type === "Link" ? "a hard link" : "a symbolic link";
    return `${kind} (to ${JSON.stringify(entry.linkpath ?? "")}) is refused: backups hold regular files only`;
  }
  return `a ${entry.type} entry is refused: backups hold regular files only`;
}

/** A parser warning as damage, naming the entry it was reading when the parser knows it. */
type WarnData = Record<string, unknown>;

function describeWarning(message: string, data: WarnData): string {
  const entry = (data.entry ?? data.header) as { path?: unknown } | undefined;
  const where = typeof entry?.path === "string" ? ` (at entry ${JSON.stringify(entry.path)})` : "";
  return `the archive is damaged: ${message}${where}`;
}

function recordOf(entry: ReadEntry, problem: string | null = null): ScannedEntry {
  return { path: entry.path, type: entry.type, bytes: 0, sha256: null, problem, stagedPath: null };
}

function writeAll(fd: number, chunk: Buffer): void {
  let offset = 0;
  while (offset < chunk.length) offset += writeSync(fd, chunk, offset);
}

function isZlibError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("Z_");
}

export function isGzipFile(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const magic = Buffer.alloc(2);
    return readSync(fd, magic, 0, 2, 0) === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/** Reads an archive once, judging every entry's name and type before anything is written. */
class Scan {
  readonly entries: ScannedEntry[] = [];
  readonly damage: string[] = [];
  manifestText: string | null = null;
  sawEnd = false;
  private readonly seen = new Set<string>();
  private openFd: number | null = null;

  constructor(private readonly options: ScanOptions) {}

  addDamage(message: string): void {
    if (this.damage.length < MAX_DAMAGE_MESSAGES) this.damage.push(message);
  }

  refuse(entry: ReadEntry, problem: string): void {
    this.entries.push({ ...recordOf(entry, problem), bytes: entry.size });
    entry.resume();
  }

  consume(entry: ReadEntry): void {
    const problem =
      entryPathProblem(entry.path) ??
      typeProblem(entry) ??
      (this.seen.has(entry.path) ? "it appears more than once" : null);
    this.seen.add(entry.path);
    if (problem) {
      this.refuse(entry, problem);
      return;
    }
    if (entry.path === MANIFEST_ENTRY) {
      this.readManifest(entry);
      return;
    }
    const target = this.options.stage(entry.path)
      ? join(this.options.stagingDir, entry.path)
      : null;
    let fd: number | null = null;
    if (target) {
      try {
        mkdirSync(dirname(target), { recursive: true, mode: DIR_MODE });
        fd = openSync(target, "wx", FILE_MODE);
      } catch (error) {
        // Caused by the archive (two entries claiming one path, a name too long), not the machine.
        const code = (error as NodeJS.ErrnoException).code ?? "";
        if (!UNPLACEABLE.has(code)) throw error;
        this.refuse(
          entry,
          `it cannot be extracted at its path (${code}): it collides with another entry or is too long`,
        );
        return;
      }
    }
    this.readBody(entry, fd, target);
  }

  private readBody(entry: ReadEntry, fd: number | null, target: string | null): void {
    const record = recordOf(entry);
    this.entries.push(record);
    this.openFd = fd;
    const hash: Hash = createHash("sha256");
    entry.on("data", (chunk: Buffer) => {
      hash.update(chunk);
      record.bytes += chunk.length;
      if (fd !== null) writeAll(fd, chunk);
    });
    entry.on("end", () => {
      // The parser ends a cut-off entry too; only a complete body gets a hash.
      if (record.bytes === entry.size) record.sha256 = hash.digest("hex");
      if (fd === null) return;
      if (this.options.durable) fsyncSync(fd);
      closeSync(fd);
      this.openFd = null;
      record.stagedPath = target;
      if (record.sha256 !== null) this.options.onStaged?.(record);
    });
  }

  private readManifest(entry: ReadEntry): void {
    if (entry.size > MAX_MANIFEST_BYTES) {
      this.refuse(entry, `it is ${entry.size} bytes, more than a manifest can be`);
      return;
    }
    const record = recordOf(entry);
    this.entries.push(record);
    const chunks: Buffer[] = [];
    const hash = createHash("sha256");
    entry.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      hash.update(chunk);
      record.bytes += chunk.length;
    });
    entry.on("end", () => {
      if (record.bytes !== entry.size) return;
      record.sha256 = hash.digest("hex");
      this.manifestText = Buffer.concat(chunks).toString("utf8");
    });
  }

  /** Closes a staged file left open by an archive that broke off in the middle of it. */
  release(): void {
    if (this.openFd !== null) closeSync(this.openFd);
    this.openFd = null;
  }
}

/**
 * Reads every entry of a tar or tar.gz archive: refuses unsafe names (absolute, `..`), links and
 * other non-regular entries and duplicates without writing them; hashes every body; writes the
 * bodies `options.stage` asks for below the staging directory. Damage (truncation, corrupt
 * compression, bad header checksums) is reported, not thrown; I/O errors of the machine are thrown.
 */
export async function scanArchive(file: string, options: ScanOptions): Promise<ArchiveScan> {
  const compressed = isGzipFile(file);
  const scan = new Scan(options);
  const parser = new Parser({
    strict: false,
    zstd: false,
    brotli: false,
    onwarn: (_code: string, message: string, data: WarnData) =>
      scan.addDamage(describeWarning(message, data)),
  });
  parser.on("entry", (entry: ReadEntry) => scan.consume(entry));
  parser.on("ignoredEntry", (entry: ReadEntry) =>
    scan.refuse(entry, `a ${entry.type} entry is refused: backups hold regular files only`),
  );
  parser.on("eof", () => {
    scan.sawEnd = true;
  });
  const source = createReadStream(file, { highWaterMark: 1 << 20 });
  const feed = async (input: AsyncIterable<Buffer>) => {
    for await (const chunk of input) parser.write(chunk);
  };
  try {
    await (compressed ? pipeline(source, createGunzip(), feed) : pipeline(source, feed));
    parser.end();
  } catch (error) {
    if (!isZlibError(error)) throw error;
    scan.addDamage(`the archive is truncated or corrupt (gzip: ${(error as Error).message})`);
  } finally {
    scan.release();
  }
  if (!scan.sawEnd && scan.damage.length === 0) {
    scan.addDamage("the archive ends without an end-of-archive marker (truncated?)");
  }
  return {
    compressed,
    entries: scan.entries,
    manifestText: scan.manifestText,
    damage: scan.damage,
  };
}

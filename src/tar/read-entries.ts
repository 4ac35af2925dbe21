import type { ReadEntry } from "tar";
import { lazyRequire } from "../lazy-require.js";

// Loaded when the first archive is read, not with the library (see lazyRequire).
const tar = lazyRequire<typeof import("tar")>("tar");

import { StateError } from "../db/errors.js";

export type TarSource = AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>;

export interface TarEntryIn {
  /** The name as stored (PAX path, GNU long name or ustar prefix + name), not normalized. */
  path: string;
  /** The `tar` package's type name: File, Directory, SymbolicLink, … or Unsupported. */
  type: string;
  size: number;
  /** The entry's bytes; read them before asking for the next entry (the rest is skipped). */
  body: AsyncIterable<Buffer>;
}

type ParseEvent = { entry: ReadEntry } | { chunk: Buffer } | { end: true };

const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
/** A PAX `path` or `linkpath` record with a NUL in its value, which the parser would cut there. */
const PAX_PATH_WITH_NUL = /(?:^|\n)\d+ (?:path|linkpath)=[^\n]*\0/;

function corrupt(reason: string): StateError {
  return new StateError("E_CORRUPT_SOURCE", `tar archive: ${reason}`, { details: { reason } });
}

function toBuffer(piece: Uint8Array | string): Buffer {
  if (typeof piece === "string") return Buffer.from(piece, "utf8");
  return Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
}

/**
 * Pulls parse events out of the `tar` package's push-based Parser. The parser handles one input
 * piece at a time, synchronously, and every entry body flows into the queue as it is parsed; the
 * next piece is read only once the queue is empty, so memory stays at about one input piece.
 */
class ParsePull {
  private readonly events: ParseEvent[] = [];
  private readonly parser = new (tar().Parser)({ strict: false, zstd: false, brotli: false });
  private readonly input: AsyncIterator<Uint8Array | string> | Iterator<Uint8Array | string>;
  private failure: Error | undefined;
  private head = Buffer.alloc(0);
  private inputDone = false;
  private sawEnd = false;

  constructor(source: TarSource) {
    this.input =
      Symbol.asyncIterator in source
        ? source[Symbol.asyncIterator]()
        : (source as Iterable<Uint8Array | string>)[Symbol.iterator]();
    const parser = this.parser;
    parser.on("entry", (entry: ReadEntry) => {
      this.events.push({ entry });
      entry.on("end", () => this.events.push({ end: true }));
      entry.on("data", (chunk: Buffer) => this.events.push({ chunk }));
    });
    parser.on("ignoredEntry", (entry: ReadEntry) => {
      // Skipping an oversized extended header would leave its entry with the wrong name.
      if (entry.meta) this.fail(corrupt(`an extended header of ${entry.size} bytes`));
      // Entries of unknown types are surfaced (with no body) so the reader decides, not skipped.
      else this.events.push({ entry }, { end: true });
    });
    parser.on("meta", (text: string) => {
      if (PAX_PATH_WITH_NUL.test(text)) {
        this.fail(new StateError("E_PATH", "tar archive: a member name contains a NUL byte"));
      }
    });
    parser.on("eof", () => {
      this.sawEnd = true;
    });
    parser.on("warn", (_code: string, message: string) => this.fail(corrupt(message)));
    parser.on("error", (error: Error) => this.fail(corrupt(error.message)));
  }

  private fail(error: Error): void {
    this.failure ??= error;
  }

  /** The next event, or undefined after the end-of-archive marker. */
  async next(): Promise<ParseEvent | undefined> {
    while (this.events.length === 0 || this.failure) {
      if (this.failure) throw this.failure;
      if (this.sawEnd) return undefined;
      if (this.inputDone) throw corrupt("no end-of-archive marker (truncated?)");
      await this.feed();
    }
    return this.events.shift();
  }

  private async feed(): Promise<void> {
    const next = await this.input.next();
    if (next.done) {
      this.inputDone = true;
      this.parser.end();
      return;
    }
    const piece = toBuffer(next.value);
    if (this.head.length < GZIP_MAGIC.length) {
      this.head = Buffer.concat([this.head, piece]).subarray(0, GZIP_MAGIC.length);
      // The parser would inflate it, and one compressed piece can expand a thousandfold.
      if (this.head.equals(GZIP_MAGIC)) this.fail(corrupt("gzip-compressed; decompress it first"));
    }
    if (!this.failure) this.parser.write(piece);
  }

  async close(): Promise<void> {
    await this.input.return?.();
  }
}

/** One entry's body, read from the shared event queue up to the entry's end. */
class EntryBody implements AsyncIterable<Buffer> {
  private done = false;

  constructor(private readonly pull: ParsePull) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    while (!this.done) {
      const event = await this.pull.next();
      if (event === undefined || "entry" in event) throw corrupt("an entry body is cut short");
      if ("end" in event) this.done = true;
      else yield event.chunk;
    }
  }
}

/**
 * Decodes a tar stream entry by entry with the `tar` package's Parser. Damage (bad checksums,
 * truncation, a missing end-of-archive marker, an oversized extended header) is E_CORRUPT_SOURCE;
 * gzip input is refused rather than inflated. Input is read only as fast as bodies are consumed.
 */
export async function* readTarEntries(source: TarSource): AsyncGenerator<TarEntryIn> {
  const pull = new ParsePull(source);
  try {
    for (let event = await pull.next(); event !== undefined; event = await pull.next()) {
      // Chunks and ends here belong to a body its reader left unread.
      if (!("entry" in event)) continue;
      const { path, type, size } = event.entry;
      yield { path, type, size, body: new EntryBody(pull) };
    }
  } finally {
    await pull.close();
  }
}

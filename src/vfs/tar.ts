import { StateError } from "../db/errors.js";
import { DIR_MODE, FILE_MODE } from "../db/files.js";
import { tarEnd, tarEntryHeader, tarPadding } from "../tar/entry-header.js";
import { readTarEntries } from "../tar/read-entries.js";
import { type ByteSource, toBuffer } from "./chunks.js";

/**
 * VFS members as tar entries and back. Only files and directories exist in the VFS: link and
 * device entries are refused on read, never materialized.
 */

export interface TarMemberOut {
  /** Relative name without a leading `/`; directories without a trailing `/` (added here). */
  name: string;
  kind: "file" | "directory";
  size: number;
  mtimeMs: number;
  /** The file's bytes; exactly `size` of them. */
  body?: () => Iterable<Uint8Array> | AsyncIterable<Uint8Array>;
}

export interface TarMemberIn {
  /** The member name as stored, not yet normalized. */
  name: string;
  kind: "file" | "directory";
  size: number;
  /** The member's bytes; read them before asking for the next member (the rest is skipped). */
  body: AsyncIterable<Buffer>;
}

async function* memberBytes(member: TarMemberOut): AsyncGenerator<Buffer> {
  const mtime = new Date(member.mtimeMs);
  if (member.kind === "directory") {
    yield tarEntryHeader({
      path: `${member.name}/`,
      type: "Directory",
      size: 0,
      mode: DIR_MODE,
      mtime,
    });
    return;
  }
  const { name, size } = member;
  yield tarEntryHeader({ path: name, type: "File", size, mode: FILE_MODE, mtime });
  let written = 0;
  for await (const chunk of member.body?.() ?? []) {
    written += chunk.length;
    if (written > size) break;
    yield toBuffer(chunk);
  }
  if (written !== size) {
    throw new StateError("E_CONFLICT", `tar export: ${name} changed size while being archived`, {
      details: { name, expected: size, written },
    });
  }
  yield tarPadding(size);
}

/** Encodes members as a tar stream (PAX records for long names), ending with the end marker. */
export async function* encodeTar(
  members: Iterable<TarMemberOut> | AsyncIterable<TarMemberOut>,
): AsyncGenerator<Buffer> {
  for await (const member of members) yield* memberBytes(member);
  yield tarEnd();
}

const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"]);
const LINK_TYPES: Record<string, string> = { Link: "hard link", SymbolicLink: "symbolic link" };

function memberKind(type: string, name: string): "file" | "directory" {
  if (type === "Directory") return "directory";
  if (FILE_TYPES.has(type)) return "file";
  const link = LINK_TYPES[type];
  if (link) {
    throw new StateError(
      "E_PATH",
      `tar member ${JSON.stringify(name)} is a ${link}; the VFS has no links`,
      { details: { path: name, type } },
    );
  }
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `tar member ${JSON.stringify(name)} has type ${type}; only files and directories can be imported`,
    { details: { path: name, type } },
  );
}

/**
 * Decodes a tar stream member by member. A member's body must be read before the next member is
 * requested; whatever it leaves unread is skipped. Links are refused (E_PATH), as are devices,
 * FIFOs and other types (E_INVALID_ARGUMENT); damage is E_CORRUPT_SOURCE.
 */
export async function* decodeTar(source: ByteSource): AsyncGenerator<TarMemberIn> {
  for await (const entry of readTarEntries(source)) {
    const kind = memberKind(entry.type, entry.path);
    yield { name: entry.path, kind, size: kind === "file" ? entry.size : 0, body: entry.body };
  }
}

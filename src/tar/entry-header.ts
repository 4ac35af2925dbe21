import { lazyRequire } from "../lazy-require.js";

// Loaded when the first archive is written, not with the library (see lazyRequire).
const tar = lazyRequire<typeof import("tar")>("tar");

const TAR_BLOCK = 512;

export interface TarEntryHeader {
  /** The entry name; a directory's ends with `/` by convention. */
  path: string;
  type: "File" | "Directory";
  size: number;
  mode: number;
  mtime: Date;
}

/**
 * The header block(s) of a regular file or directory entry. Owner and group are always 0: the
 * archives are read back by another user or into a store that has no owners.
 */
export function tarEntryHeader(entry: TarEntryHeader): Buffer {
  const { path, size, mtime } = entry;
  const header = new (tar().Header)({
    path,
    mode: entry.mode,
    size,
    mtime,
    type: entry.type,
    uid: 0,
    gid: 0,
  });
  const needsPax = header.encode();
  const block = header.block as Buffer;
  // A name that fits neither ustar's name and prefix fields nor ASCII, or a size over 8 GiB,
  // needs a PAX record before the header that carries it.
  return needsPax ? Buffer.concat([new (tar().Pax)({ path, size, mtime }).encode(), block]) : block;
}

/** The zero bytes that pad an entry body of `size` bytes to a whole block. */
export function tarPadding(size: number): Buffer {
  return Buffer.alloc((TAR_BLOCK - (size % TAR_BLOCK)) % TAR_BLOCK);
}

/** The end-of-archive marker: two zero blocks. */
export function tarEnd(): Buffer {
  return Buffer.alloc(TAR_BLOCK * 2);
}

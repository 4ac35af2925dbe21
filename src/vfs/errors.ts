import { StateError, type StateErrorCode } from "../db/errors.js";

/**
 * The POSIX condition behind a VFS failure, kept in `details.errno` so callers (and the
 * property test that runs the same operations on a real directory) can tell `ENOTDIR` from
 * `EISDIR` although both are `E_CONFLICT`.
 */
export type VfsErrno = "ENOENT" | "ENOTDIR" | "EISDIR" | "EEXIST" | "ENOTEMPTY" | "EINVAL";

const CODE: Record<VfsErrno, StateErrorCode> = {
  ENOENT: "E_NOT_FOUND",
  ENOTDIR: "E_CONFLICT",
  EISDIR: "E_CONFLICT",
  EEXIST: "E_CONFLICT",
  ENOTEMPTY: "E_CONFLICT",
  EINVAL: "E_INVALID_ARGUMENT",
};

const TEXT: Record<VfsErrno, string> = {
  ENOENT: "no such file or directory",
  ENOTDIR: "not a directory",
  EISDIR: "is a directory",
  EEXIST: "already exists",
  ENOTEMPTY: "directory not empty",
  EINVAL: "cannot move or copy a directory into itself",
};

export interface VfsErrorWhere {
  namespace: string;
  op: string;
  path: string;
  dest?: string;
}

export function vfsError(errno: VfsErrno, where: VfsErrorWhere): StateError {
  const target =
    where.dest === undefined ? JSON.stringify(where.path) : `${where.path} -> ${where.dest}`;
  return new StateError(
    CODE[errno],
    `vfs ${where.op} ${target}: ${TEXT[errno]} (namespace "${where.namespace}")`,
    { details: { ...where, errno } },
  );
}

export function vfsErrnoOf(error: unknown): VfsErrno | undefined {
  return error instanceof StateError ? (error.details.errno as VfsErrno | undefined) : undefined;
}

/** A path refused by the VFS for what it names (the root, a directory hint on a file, …). */
export function vfsPathError(where: VfsErrorWhere, reason: string): StateError {
  return new StateError("E_PATH", `vfs ${where.op} ${JSON.stringify(where.path)}: ${reason}`, {
    details: { ...where, reason },
  });
}

/** A file's content changed (rewritten or appended) between two chunk reads. */
export function vfsChangedError(where: VfsErrorWhere): StateError {
  return new StateError(
    "E_CONFLICT",
    `vfs ${where.op} ${JSON.stringify(where.path)}: the file changed while it was being read (namespace "${where.namespace}")`,
    { details: { ...where } },
  );
}

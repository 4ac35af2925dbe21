import { closeSync, fsyncSync, linkSync, openSync, renameSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { StateError } from "../db/errors.js";

/** fsync a directory so that a rename or link in it survives a crash. Best effort where unsupported. */
export function syncDir(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    fsyncSync(fd);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM") throw error;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Moves a finished file to `target` without ever replacing something already there: a hard link
 * fails if the name is taken, where a rename would silently overwrite it.
 */
export function placeNewFile(from: string, target: string): void {
  try {
    linkSync(from, target);
    unlinkSync(from);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") {
      throw new StateError(
        "E_CONFLICT",
        `${target} appeared while the backup was written; it was left as it is`,
        {
          details: { path: target },
        },
      );
    }
    // Filesystems without hard links: the existence check before the backup is what remains.
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw error;
    renameSync(from, target);
  }
  syncDir(dirname(target));
}

/**
 * Database files this process has opened and checked, by path: the file's identity (device,
 * inode, birth time) and the schema version it was found at. A reopen of the same file at the
 * same version skips the checks only a different file could fail (applied-migration hashes, a
 * pending layout upgrade, file modes): a pool that closes and reopens agents paid them on every
 * reopen. A file put in its place (restore, salvage) is another file, so it is checked again; one
 * rewritten in place at the same version by another build is not (the hashes are not re-read).
 */
const checked = new Map<string, { identity: string; version: number }>();

/** The version `path` was checked at in this process, if it is still the same file. */
export function checkedVersion(path: string, identity: string | undefined): number | undefined {
  if (identity === undefined) return undefined;
  const found = checked.get(path);
  return found?.identity === identity ? found.version : undefined;
}

export function noteChecked(path: string, identity: string | undefined, version: number): void {
  if (identity !== undefined) checked.set(path, { identity, version });
}

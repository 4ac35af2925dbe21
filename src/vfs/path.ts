import { resolve, sep } from "node:path";
import { StateError } from "../db/errors.js";

/**
 * The one path normalizer of the scratch filesystem. Every VFS method, run-artifact path, tar
 * member name and host file name synced back from a projection goes through `parseVfsPath`, so
 * there is exactly one definition of what a VFS path is:
 *
 * - Canonical form: `/` or `/a/b`: NFC, rooted, no empty, `.` or `..` segments, no trailing `/`.
 * - Absolute and relative inputs are the same path (`a/b` = `/a/b`): the namespace is the root.
 * - `//` collapses, `.` drops, `..` pops lexically (the VFS has no symlinks, so lexical is exact);
 *   a `..` above the root is refused, never clamped.
 * - Refused with `E_PATH` naming the input: empty input, NUL and other control characters, lone
 *   surrogates, bidi display controls, backslashes (a separator on some hosts), segments that
 *   Unicode compatibility folding (NFKC) turns into `.`, `..` or a separator (fullwidth dots and
 *   slashes), segments over 255 bytes and paths over 4096 bytes (UTF-8) - the host limits, so a
 *   projection never hits ENAMETOOLONG.
 * - A trailing `/` (or `/.`) asserts a directory: file operations refuse it.
 * - Nothing is ever decoded: `%2e%2e` is a literal name.
 */

export const MAX_VFS_PATH_BYTES = 4096;
export const MAX_VFS_NAME_BYTES = 255;
export const VFS_ROOT = "/";

export interface ParsedVfsPath {
  /** The canonical path: `/` or `/a/b`. */
  readonly path: string;
  readonly segments: readonly string[];
  /** The input ended with `/`, `/.` or `/..` below the root: it names a directory. */
  readonly directoryHint: boolean;
}

function refuse(input: string, reason: string): StateError {
  const shown = JSON.stringify(input.length > 200 ? `${input.slice(0, 200)}…` : input);
  return new StateError("E_PATH", `invalid VFS path ${shown}: ${reason}`, {
    details: { path: input.slice(0, MAX_VFS_PATH_BYTES), reason },
  });
}

function isBidiControl(code: number): boolean {
  return (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

const SAFE_ASCII = /^[\x20-\x5b\x5d-\x7e]*$/;

function checkCharacters(input: string): void {
  // Most paths are printable ASCII without a backslash: one regex test instead of a loop.
  if (SAFE_ASCII.test(input)) return;
  for (const char of input) {
    const code = char.codePointAt(0) as number;
    const hex = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
    if (code === 0) throw refuse(input, "contains a NUL byte");
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) {
      throw refuse(input, `contains the control character ${hex}`);
    }
    if (code >= 0xd800 && code <= 0xdfff) throw refuse(input, `contains a lone surrogate ${hex}`);
    if (isBidiControl(code)) throw refuse(input, `contains the bidi display control ${hex}`);
    if (char === "\\") {
      throw refuse(input, "contains a backslash (a separator on some hosts; use /)");
    }
  }
}

const PLAIN_ASCII = /^[\x20-\x7e]*$/;

function checkSegment(input: string, segment: string): void {
  if (Buffer.byteLength(segment) > MAX_VFS_NAME_BYTES) {
    throw refuse(input, `a name is longer than ${MAX_VFS_NAME_BYTES} bytes`);
  }
  if (PLAIN_ASCII.test(segment)) return;
  // A later NFKC step anywhere (a shell, a web framework, a sync tool) must not turn a literal
  // name into a traversal: refuse look-alikes of dot segments and separators outright.
  const folded = segment.normalize("NFKC");
  if (folded === "." || folded === ".." || folded.includes("/") || folded.includes("\\")) {
    throw refuse(input, `the name ${JSON.stringify(segment)} folds to ${JSON.stringify(folded)}`);
  }
}

/** Parses and normalizes a VFS path; throws `E_PATH` (naming the input) when it is refused. */
export function parseVfsPath(input: unknown): ParsedVfsPath {
  if (typeof input !== "string") {
    throw new TypeError(`Expected a VFS path string, got ${typeof input}`);
  }
  if (input.length === 0) throw refuse(input, 'is empty (the root is "/")');
  if (input.length > MAX_VFS_PATH_BYTES) {
    throw refuse(input, `is longer than ${MAX_VFS_PATH_BYTES} characters`);
  }
  checkCharacters(input);
  const raw = input.normalize("NFC").split("/");
  const segments: string[] = [];
  for (const segment of raw) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      if (segments.length === 0) throw refuse(input, '".." escapes the root');
      segments.pop();
      continue;
    }
    checkSegment(input, segment);
    segments.push(segment);
  }
  const path = `/${segments.join("/")}`;
  if (Buffer.byteLength(path) > MAX_VFS_PATH_BYTES) {
    throw refuse(input, `is longer than ${MAX_VFS_PATH_BYTES} bytes once normalized`);
  }
  const last = raw[raw.length - 1];
  const directoryHint = segments.length > 0 && (last === "" || last === "." || last === "..");
  return { path, segments, directoryHint };
}

/** The canonical form of a VFS path (`/` or `/a/b`); see `parseVfsPath`. */
export function normalizeVfsPath(input: unknown): string {
  return parseVfsPath(input).path;
}

/** The parent of a canonical path; the root is its own parent. */
export function vfsParent(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? VFS_ROOT : path.slice(0, slash);
}

/** The last segment of a canonical path; `""` for the root. */
export function vfsBaseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** True when `path` lies strictly below `ancestor` (both canonical). */
export function isVfsDescendant(path: string, ancestor: string): boolean {
  if (ancestor === VFS_ROOT) return path !== VFS_ROOT;
  return path.startsWith(`${ancestor}/`);
}

/**
 * `relative` (normalized on its own, as if rooted) placed below `base`: a member name such as
 * `../x` is refused rather than resolved against `base`, so it cannot leave the target subtree.
 */
export function vfsJoin(base: string, relative: string): string {
  const { path } = parseVfsPath(relative);
  if (path === VFS_ROOT) return base;
  const joined = base === VFS_ROOT ? path : `${base}${path}`;
  if (Buffer.byteLength(joined) > MAX_VFS_PATH_BYTES) {
    throw refuse(joined, `is longer than ${MAX_VFS_PATH_BYTES} bytes`);
  }
  return joined;
}

/** `path` relative to `base` (`a/b`, or `""` for `base` itself); both canonical. */
export function vfsRelative(base: string, path: string): string {
  if (path === base) return "";
  if (!isVfsDescendant(path, base)) {
    throw new TypeError(`Expected ${JSON.stringify(path)} to lie below ${JSON.stringify(base)}`);
  }
  return path.slice(base === VFS_ROOT ? 1 : base.length + 1);
}

/**
 * Bounds of every canonical path strictly below `path`, for an index range scan: in binary
 * order, `x/…` sorts in [`x/`, `x0`) because `0` is the character after `/`.
 */
export function descendantRange(path: string): readonly [string, string] {
  return path === VFS_ROOT ? ["/", "0"] : [`${path}/`, `${path}0`];
}

/**
 * Where a VFS path below `base` lives under a host directory. The segments are already safe;
 * the containment check is defence in depth (it also catches a Windows drive-relative name).
 */
export function hostPathFor(hostRoot: string, base: string, path: string): string {
  const root = resolve(hostRoot);
  const relative = vfsRelative(base, path);
  const full = relative === "" ? root : resolve(root, ...relative.split("/"));
  if (full !== root && !full.startsWith(`${root}${sep}`)) {
    throw refuse(path, `maps outside the host directory ${root}`);
  }
  return full;
}

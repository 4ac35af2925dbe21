import { StateError } from "../../db/errors.js";
import { type JsonValue, toJson } from "../json.js";

export const DEFAULT_VFS_NAMESPACE = "scratch";
export const MAX_VFS_METADATA_BYTES = 16 * 1024;
// Namespaces are row keys, never host path components; the character set keeps them readable in
// CLI flags and log lines.
const NAMESPACE = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;

export type VfsMetadata = { [key: string]: JsonValue };

export interface WriteFileOptions {
  /** Small JSON object stored with the file (content type, source tool …); replaced on write. */
  metadata?: VfsMetadata;
  /** Create missing parent directories (`mkdir -p`) instead of failing with E_NOT_FOUND. */
  parents?: boolean;
}

export interface MkdirOptions {
  /** Create missing parents and accept an existing directory (`mkdir -p`). Default true. */
  recursive?: boolean;
}

export interface RmOptions {
  /** Remove a directory and everything below it. Default false. */
  recursive?: boolean;
  /** A missing path is not an error. Default false. */
  force?: boolean;
}

export interface CopyOptions {
  /** Replace an existing file at the destination (never a directory). Default false. */
  overwrite?: boolean;
}

export function checkVfsNamespace(namespace: unknown): string {
  if (typeof namespace !== "string" || !NAMESPACE.test(namespace)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `VFS namespace must be 1 to 128 letters, digits, "_", ".", ":" or "-" (not starting with "." ":" "-"), got ${JSON.stringify(namespace)?.slice(0, 80)}`,
      { details: { namespace: String(namespace).slice(0, 200) } },
    );
  }
  return namespace;
}

/** The JSON text of an entry's metadata: a small plain object, `{}` when absent. */
export function metadataJsonOf(metadata: unknown, where: string): string {
  if (metadata === undefined) return "{}";
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    throw new StateError("E_INVALID_ARGUMENT", `${where}: metadata must be a plain JSON object`);
  }
  const json = toJson(metadata, `${where} metadata`);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_VFS_METADATA_BYTES) {
    throw new StateError(
      "E_TOO_LARGE",
      `${where}: metadata is ${bytes} bytes of JSON; the limit is ${MAX_VFS_METADATA_BYTES}`,
      { details: { bytes, limit: MAX_VFS_METADATA_BYTES } },
    );
  }
  return json;
}

export interface VfsNamespaceInfo {
  namespace: string;
  entries: number;
  /** Bytes of the namespace's files. */
  bytes: number;
}

import type { JsonValue } from "../../stores/json.js";
import type { LegacySource } from "../discover.js";
import { parseLegacyJson, readLegacyText } from "../legacy-file.js";
import type { ImportContext, ImportOutcome, KindHandler, SourceScan } from "./types.js";

/** Small gateway state files without a typed table yet: kept whole in global kv. */
export const SIDECAR_KV_SCOPE = "legacy-sidecar";

function read(absPath: string): JsonValue | undefined {
  const text = readLegacyText(absPath);
  if (text.trim() === "") return undefined;
  return parseLegacyJson(absPath, text) as JsonValue;
}

function scan(absPath: string, _source: LegacySource): SourceScan {
  const value = read(absPath);
  return {
    records: value === undefined ? 0 : 1,
    problems: [],
    notes: value === undefined ? ["empty file"] : [],
  };
}

function importSidecar(context: ImportContext): ImportOutcome {
  const value = read(context.source.absPath);
  if (value === undefined) return { records: 0, alreadyPresent: 0, problems: [] };
  const existing = context.home.kv.get(SIDECAR_KV_SCOPE, context.source.path);
  context.home.kv.set(SIDECAR_KV_SCOPE, context.source.path, value);
  const same = existing !== undefined && JSON.stringify(existing) === JSON.stringify(value);
  return { records: 1, alreadyPresent: same ? 1 : 0, problems: [] };
}

export const sidecarKind: KindHandler = { scan, import: importSidecar };

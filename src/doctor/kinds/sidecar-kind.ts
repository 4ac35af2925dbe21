import { readFileSync } from "node:fs";
import { lazyRequire } from "../../lazy-require.js";
import type { JsonValue } from "../../stores/json.js";
import type { LegacySource } from "../discover.js";
import type { ImportContext, ImportOutcome, KindHandler, SourceScan } from "./types.js";

const json5 = lazyRequire<typeof import("json5")>("json5");

/** Small gateway state files without a typed table yet: kept whole in global kv. */
export const SIDECAR_KV_SCOPE = "legacy-sidecar";

function read(absPath: string): JsonValue | undefined {
  const text = readFileSync(absPath, "utf8").replace(/^\uFEFF/, "");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return json5().parse(text) as JsonValue;
  }
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

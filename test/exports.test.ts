import { describe, expect, it } from "vitest";
import * as api from "../src/index.js";

describe("public API", () => {
  it("exports exactly the documented runtime names", () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        "Database",
        "INLINE_BLOB_THRESHOLD",
        "TranscriptTree",
        "buildContext",
        "encodeJsonl",
        "parseJsonl",
        "KvStore",
        "MAX_KV_VALUE_BYTES",
        "STATE_ERROR_CODES",
        "StateError",
        "StateHome",
        "describeHome",
        "isStateError",
        "latestSchemaVersion",
        "openDatabase",
        "openStateHome",
        "resolveHomePath",
        "validateAgentId",
        "createBackup",
        "verifyBackup",
        "restoreBackup",
        "listBackups",
        "planMigration",
        "runDoctorFix",
        "exportTar",
        "exportToDirectory",
        "importFromDirectory",
        "importTar",
        "FACT_CATEGORIES",
        "FACT_SENSITIVITIES",
        "RECALL_POLICIES",
        "TOPIC_STATUSES",
        "parseSecretRef",
      ].sort(),
    );
  });
});

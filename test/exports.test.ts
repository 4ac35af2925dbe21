import { describe, expect, it } from "vitest";
import * as api from "../src/index.js";
import * as pi from "../src/pi/index.js";

describe("public API", () => {
  it("exports exactly the documented runtime names", () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        "Database",
        "DRIVER_NAMES",
        "chooseDriver",
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
        "collectGarbage",
        "scheduleGc",
        "isStateError",
        "latestSchemaVersion",
        "openDatabase",
        "openStateHome",
        "openControlPlane",
        "openClusterHome",
        "loadClusterConfig",
        "ClusterHome",
        "resolveHomePath",
        "validateAgentId",
        "createBackup",
        "verifyBackup",
        "restoreBackup",
        "listBackups",
        "pruneBackups",
        "planMigration",
        "runDoctorFix",
        "startServer",
        "exportTar",
        "exportToDirectory",
        "importFromDirectory",
        "importTar",
        "FACT_CATEGORIES",
        "FACT_SENSITIVITIES",
        "RECALL_POLICIES",
        "TOPIC_STATUSES",
        "parseSecretRef",
        "AgentRuntime",
        "createAgentRuntime",
        "resolveWorkerMode",
        "WORKER_MODES",
        "FILESYSTEM_MODES",
        "prepareAgentRun",
        "runDemoConversation",
        "ScriptedBackend",
        "OpenAiBackend",
        "permissionFlags",
        "permissionGrants",
        "TOOL_DEFINITIONS",
      ].sort(),
    );
  });

  it("exports the pi session manager from agentstate/pi only", () => {
    expect(Object.keys(pi)).toEqual(["AgentStateSessionManager"]);
    expect(Object.keys(api)).not.toContain("AgentStateSessionManager");
  });
});

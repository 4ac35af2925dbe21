import type { LegacySourceKind } from "../discover.js";
import { cronJobsKind, cronJobsStateKind, cronRunsKind } from "./cron-kind.js";
import { daycareDescriptorKind, daycareHistoryKind, daycareStateKind } from "./daycare-kind.js";
import { deliveryQueueKind } from "./delivery-queue-kind.js";
import { sessionIndexKind } from "./session-index-kind.js";
import { sidecarKind } from "./sidecar-kind.js";
import { subagentRunsKind } from "./subagent-kind.js";
import { transcriptKind } from "./transcript-kind.js";
import type { KindHandler } from "./types.js";

/** The kinds this release can import. A kind with a target but no handler is left in place. */
export const KIND_HANDLERS: Partial<Record<LegacySourceKind, KindHandler>> = {
  "session-index": sessionIndexKind,
  transcript: transcriptKind,
  "transcript-archive": transcriptKind,
  sidecar: sidecarKind,
  "agent-descriptor": daycareDescriptorKind,
  "agent-state": daycareStateKind,
  "agent-history": daycareHistoryKind,
  "cron-jobs": cronJobsKind,
  "cron-jobs-state": cronJobsStateKind,
  "cron-runs": cronRunsKind,
  "subagent-runs": subagentRunsKind,
  "delivery-queue": deliveryQueueKind,
};

/** Import order: indexes before transcripts (so keys exist), archives before the live file. */
export const KIND_ORDER: readonly LegacySourceKind[] = [
  "session-index",
  "transcript-archive",
  "transcript",
  "agent-descriptor",
  "agent-state",
  "agent-history",
  "cron-jobs",
  "cron-jobs-state",
  "cron-runs",
  "subagent-runs",
  "delivery-queue",
  "sidecar",
  "lock",
  "ignored",
  "config",
  "credentials",
];

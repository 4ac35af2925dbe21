import type { Command } from "commander";
import { readClusterStatus } from "../../control-plane/cluster-status.js";
import type { LeaseStatus } from "../../control-plane/control-plane.js";
import { formatBytes } from "../../format-bytes.js";
import { addExamples, addHomeOption, addJsonOption, type JsonOption } from "../common.js";
import {
  addControlPlaneOption,
  type ControlPlaneOption,
  withControlPlane,
} from "../control-plane-option.js";
import { printJson, renderTable } from "../output.js";
import { sanitize } from "../render/style.js";

interface ClusterStatusOptions extends ControlPlaneOption, JsonOption {
  full?: boolean;
}

/** A span of milliseconds as an operator reads it: 850 ms, 12.4 s, 3.0 min, 2.5 h. */
function span(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(ms)} ms`;
  if (abs < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (abs < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

function leaseState(lease: LeaseStatus, now: number): string {
  if (lease.host === null) return "released";
  const left = lease.expiresAt - now;
  return lease.live ? `held, ${span(left)} left` : `lapsed ${span(-left)} ago`;
}

function replicaLag(lease: LeaseStatus, now: number): string {
  if (!lease.live || lease.replicaLagMs === null || lease.replicaCheckedAt === null) return "-";
  return `${span(lease.replicaLagMs)} (seen ${span(now - lease.replicaCheckedAt)} ago)`;
}

const HELP = `
Reads the control plane (--control-plane, else $AGENTSTATE_CONTROL_PLANE, else the home's own
database): the hosts holding agents, every agent's lease (its host, epoch and deadline) with the
lag of its off-host replica as its host last reported it (after each lease renewal), the size of
its database as the control plane's agent registry last recorded it (when a host took or released
it), and the delivery queues' depths. A host appears while it holds at least one lease. It only reads.

Examples:
  agentstate cluster status --control-plane postgres://agentstate@db/agentstate
  agentstate cluster status --home ~/.agentstate --json`;

export function registerCluster(program: Command): void {
  const cluster = program
    .command("cluster")
    .description("hosts, agent leases and replica lag of a cluster's control plane");
  addExamples(cluster, [
    "agentstate cluster status --control-plane postgres://agentstate@db/agentstate",
    "agentstate cluster status --json",
  ]);
  const status = cluster
    .command("status")
    .description("show hosts, agent leases, replica lag and size per agent, and queue depths")
    .option("--full", "show agent and host names whole instead of cut with …")
    .addHelpText("after", HELP);
  addControlPlaneOption(status);
  addHomeOption(status);
  addJsonOption(status);
  status.action(async (options: ClusterStatusOptions) => {
    const report = await withControlPlane(options, (cp) => readClusterStatus(cp));
    if (options.json) {
      printJson(report);
      return;
    }
    process.stdout.write(`${render(report, options.full === true)}\n`);
  });
}

function render(report: Awaited<ReturnType<typeof readClusterStatus>>, full: boolean): string {
  const now = report.at;
  const parts = [`control plane: ${report.backend}`];
  if (report.agents.length === 0) {
    parts.push("no agent leases: no host has opened an agent through this control plane");
  } else {
    parts.push(
      renderTable(
        report.hosts,
        [
          { header: "HOST", value: (h) => sanitize(h.host), max: 32 },
          { header: "AGENTS", value: (h) => h.agents, align: "right" },
          { header: "WORST LAG", value: (h) => (h.worstLagMs === null ? "-" : span(h.worstLagMs)) },
          { header: "NEXT DEADLINE", value: (h) => `in ${span(h.nextExpiry - now)}` },
        ],
        { full },
      ),
      renderTable(
        report.agents,
        [
          { header: "AGENT", value: (a) => sanitize(a.agentId), max: 32 },
          { header: "HOST", value: (a) => sanitize(a.host ?? "-"), max: 32 },
          { header: "EPOCH", value: (a) => a.epoch, align: "right" },
          { header: "LEASE", value: (a) => leaseState(a, now) },
          { header: "REPLICA LAG", value: (a) => replicaLag(a, now) },
          {
            header: "SIZE",
            value: (a) => (a.sizeBytes === null ? "-" : formatBytes(a.sizeBytes)),
            align: "right",
          },
        ],
        { full },
      ),
    );
  }
  if (report.queues.length > 0) {
    parts.push(
      renderTable(report.queues, [
        { header: "QUEUE", value: (q) => sanitize(q.queue) },
        { header: "PENDING", value: (q) => q.pending, align: "right" },
        { header: "LEASED", value: (q) => q.leased, align: "right" },
        { header: "FAILED", value: (q) => q.failed, align: "right" },
      ]),
    );
  }
  return parts.join("\n\n");
}

import type { Command } from "commander";
import type { ControlPlane } from "../control-plane/control-plane.js";
import { openControlPlane } from "../control-plane/open-control-plane.js";
import { closeHome, type HomeOptions, openReadHome } from "./common.js";

export interface ControlPlaneOption extends HomeOptions {
  controlPlane?: string;
}

export function addControlPlaneOption(command: Command): Command {
  return command.option(
    "--control-plane <url>",
    "postgres:// URL of the control plane (default: $AGENTSTATE_CONTROL_PLANE, else the home's own)",
  );
}

/**
 * Runs `fn` on the control plane the flags name: `--control-plane`, else
 * `$AGENTSTATE_CONTROL_PLANE`, else the home's own database, opened read-only.
 */
export async function withControlPlane<T>(
  options: ControlPlaneOption,
  fn: (cp: ControlPlane) => Promise<T>,
): Promise<T> {
  const url = options.controlPlane ?? (process.env.AGENTSTATE_CONTROL_PLANE || undefined);
  const home = url === undefined ? openReadHome(options) : undefined;
  try {
    const cp = await openControlPlane(url === undefined ? { home } : { url });
    try {
      return await fn(cp);
    } finally {
      await cp.close();
    }
  } finally {
    if (home) closeHome(home);
  }
}

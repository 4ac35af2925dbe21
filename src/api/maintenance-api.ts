import { rejectUnknownOptions } from "../db/options.js";
import {
  loadPolicy,
  type MaintenanceOverrides,
  type MaintenancePolicy,
} from "../maintenance/policy.js";
import {
  type MaintenanceHost,
  type MaintenanceOptions,
  type PlanReport,
  planHome,
  type RunReport,
  runPlan,
} from "../maintenance/run.js";

const OPTION_KEYS = ["overrides", "onProgress"];

/**
 * The home's maintenance policy (`agentstate.json`): which idle sessions move to cold storage,
 * which archived or ended ones are deleted, and the disk budget. `plan()` changes nothing;
 * `run()` plans afresh and applies what `plan()` would have said.
 */
export class MaintenanceApi {
  constructor(private readonly host: MaintenanceHost) {}

  /** The effective policy: `agentstate.json` over the safe defaults, then `overrides`. */
  policy(overrides: MaintenanceOverrides = {}): MaintenancePolicy {
    return loadPolicy(this.host.path, overrides);
  }

  plan(options: MaintenanceOptions = {}): PlanReport {
    rejectUnknownOptions(options, OPTION_KEYS, "maintenance.plan");
    return planHome(this.host, options);
  }

  run(options: MaintenanceOptions = {}): RunReport {
    rejectUnknownOptions(options, OPTION_KEYS, "maintenance.run");
    return runPlan(this.host, planHome(this.host, options), options);
  }
}

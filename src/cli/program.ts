import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { registerBackup } from "./commands/backup.js";
import { registerCluster } from "./commands/cluster.js";
import { registerCron } from "./commands/cron.js";
import { registerDeliveries } from "./commands/deliveries.js";
import { registerDemo } from "./commands/demo.js";
import { registerDoctor } from "./commands/doctor.js";
import { registerGc } from "./commands/gc.js";
import { registerInputs } from "./commands/inputs.js";
import { registerKv } from "./commands/kv.js";
import { registerMemory } from "./commands/memory.js";
import { registerServe } from "./commands/serve.js";
import { registerSessions } from "./commands/sessions.js";
import { registerStatus } from "./commands/status.js";
import { registerTranscript } from "./commands/transcript.js";
import { registerUsage } from "./commands/usage.js";
import { registerVfs } from "./commands/vfs.js";
import { addExamples } from "./common.js";
import { packageRoot } from "./package-root.js";
import { configureUsageErrors } from "./usage.js";

/** `json`: print usage errors as JSON (the caller reports them), not as commander's text. */
export function buildProgram({ json = false }: { json?: boolean } = {}): Command {
  const { version } = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as {
    version: string;
  };
  const program = new Command("agentstate")
    .description("Durable SQLite state for AI-agent gateways: inspect, migrate, back up and search")
    .version(version)
    .showHelpAfterError()
    .configureHelp({ sortSubcommands: true });
  configureUsageErrors(program, json);
  addExamples(
    program,
    [
      "agentstate status",
      "agentstate doctor --home ~/.openclaw",
      "agentstate transcript search invoice --limit 5",
      "agentstate serve --home ~/.agentstate",
    ],
    "Every command's --help lists its options and ends with examples.",
  );
  registerStatus(program);
  registerBackup(program);
  registerKv(program);
  registerDemo(program);
  registerDoctor(program);
  registerSessions(program);
  registerTranscript(program);
  registerGc(program);
  registerCron(program);
  registerVfs(program);
  registerMemory(program);
  registerInputs(program);
  registerUsage(program);
  registerDeliveries(program);
  registerServe(program);
  registerCluster(program);
  return program;
}

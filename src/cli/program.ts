import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { registerBackup } from "./commands/backup.js";
import { registerCron } from "./commands/cron.js";
import { registerDemo } from "./commands/demo.js";
import { registerDoctor } from "./commands/doctor.js";
import { registerGc } from "./commands/gc.js";
import { registerKv } from "./commands/kv.js";
import { registerMemory } from "./commands/memory.js";
import { registerServe } from "./commands/serve.js";
import { registerSessions } from "./commands/sessions.js";
import { registerStatus } from "./commands/status.js";
import { registerTranscript } from "./commands/transcript.js";
import { registerVfs } from "./commands/vfs.js";
import { packageRoot } from "./package-root.js";

export function buildProgram(): Command {
  const { version } = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as {
    version: string;
  };
  const program = new Command("agentstate")
    .description("Durable SQLite state for AI-agent gateways: inspect, migrate, back up and search")
    .version(version)
    .showHelpAfterError()
    .configureHelp({ sortSubcommands: true });
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
  registerServe(program);
  return program;
}

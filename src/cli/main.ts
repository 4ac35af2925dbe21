#!/usr/bin/env node
import { reportError } from "./errors.js";
import { buildProgram } from "./program.js";

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error, process.argv.includes("--json"));
}

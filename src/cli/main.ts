#!/usr/bin/env node
import { reportError } from "./errors.js";
import { buildProgram } from "./program.js";
import { isUsageExit, reportUsageExit } from "./usage.js";

// A reader that stops early (`| head`) closes the pipe: that ends the output, it is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

const json = process.argv.includes("--json");
try {
  await buildProgram({ json }).parseAsync(process.argv);
} catch (error) {
  process.exitCode = isUsageExit(error) ? reportUsageExit(error, json) : reportError(error, json);
}

import { quarantinedLineJson } from "../../doctor/run-problems.js";
import type { QuarantinedLine } from "../../stores/global/migration-quarantine-store.js";
import { type HomeOptions, type JsonOption, withReadHome } from "../common.js";
import { printJson, renderTable } from "../output.js";
import { sanitize } from "../render/style.js";
import { writeExport } from "./transcript.js";

export interface QuarantinedOptions extends HomeOptions, JsonOption {
  run?: string;
  out?: string;
  force?: boolean;
}

const LIST_LIMIT = 100_000;

/** The start of a line for a terminal: control characters and invalid UTF-8 made visible. */
function preview(bytes: Buffer): string {
  const text = sanitize(bytes.subarray(0, 60).toString("utf8"));
  return bytes.length > 60 ? `${text}…` : text;
}

function render(lines: readonly QuarantinedLine[]): string {
  if (lines.length === 0) return "No quarantined lines.";
  return renderTable(lines, [
    { header: "WHERE", value: (l) => `${l.path}:${l.line}` },
    { header: "BYTES", value: (l) => l.bytes.length, align: "right" },
    { header: "REASON", value: (l) => l.reason },
    { header: "RUN", value: (l) => l.runId },
    { header: "START", value: (l) => preview(l.bytes) },
  ]);
}

/**
 * `doctor --quarantined`: the lines earlier `--fix --quarantine` runs kept. `--out FILE` exports
 * them: the raw lines, one per line and byte for byte, or with `--json` the JSON list.
 */
export function showQuarantined(options: QuarantinedOptions): void {
  const lines = withReadHome(options, (home) =>
    home.quarantine.list({
      limit: LIST_LIMIT,
      ...(options.run === undefined ? {} : { runId: options.run }),
    }),
  );
  if (options.out !== undefined) {
    const content = options.json
      ? [`${JSON.stringify(lines.map(quarantinedLineJson), null, 2)}\n`]
      : lines.flatMap((l) => [l.bytes, "\n"]);
    writeExport(content, options.out, options.force === true);
    process.stderr.write(`wrote ${lines.length} quarantined line(s) to ${options.out}\n`);
    return;
  }
  if (options.json) printJson(lines.map(quarantinedLineJson));
  else process.stdout.write(`${render(lines)}\n`);
}

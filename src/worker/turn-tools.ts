import { isStateError } from "../db/errors.js";
import type { FsCapability } from "./fs-capability.js";
import type { ToolCall, ToolOutcome, TurnWriter } from "./turn-writer.js";

export type { ToolCall, ToolOutcome };

/** A tool as a model sees it: a name, what it does, and JSON Schema for its arguments. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

const path = { type: "string", description: "file path; prefix scratch: or workspace: to choose" };

export const TOOL_DEFINITIONS: readonly ToolDefinition[] = Object.freeze([
  {
    name: "read_file",
    description: "Read a text file.",
    parameters: { type: "object", properties: { path }, required: ["path"] },
  },
  {
    name: "write_file",
    description: "Create or replace a text file (parent directories are created).",
    parameters: {
      type: "object",
      properties: { path, content: { type: "string" } },
      required: ["path", "content"],
    },
  },
  {
    name: "list_files",
    description: "List a directory; subdirectories end with /.",
    parameters: { type: "object", properties: { path } },
  },
  {
    name: "delete_file",
    description: "Delete a file or directory tree.",
    parameters: { type: "object", properties: { path }, required: ["path"] },
  },
  {
    name: "exec",
    description: "Run a program (argv, no shell) in the working directory and return its output.",
    parameters: {
      type: "object",
      properties: {
        command: { type: "array", items: { type: "string" } },
        cwd: { type: "string" },
      },
      required: ["command"],
    },
  },
]);

function stringArg(call: ToolCall, name: string): string {
  const value = call.arguments[name];
  if (typeof value !== "string") throw new TypeError(`${call.name}: "${name}" must be a string`);
  return value;
}

function describeError(error: unknown): string {
  if (isStateError(error)) return `${error.code}: ${error.message}`;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" ? `${code}: ${message}` : message;
}

/**
 * The tools of one turn, over its filesystem capability. A call is recorded as events and a
 * `toolResult` message; a refused path or a failing program is a tool error the model can read,
 * not a failed turn. Only a cancelled turn throws.
 */
export class TurnTools {
  readonly definitions = TOOL_DEFINITIONS;

  constructor(
    private readonly fs: FsCapability,
    private readonly writer: TurnWriter,
    private readonly signal: AbortSignal,
  ) {}

  async call(call: ToolCall): Promise<ToolOutcome> {
    this.writer.toolCall(call);
    let outcome: ToolOutcome;
    try {
      outcome =
        call.name === "exec" ? await this.exec(call) : { output: this.file(call), isError: false };
    } catch (error) {
      if (this.signal.aborted) throw this.signal.reason;
      outcome = { output: describeError(error), isError: true };
    }
    this.writer.toolResult(call, outcome);
    return outcome;
  }

  /** Records a result produced elsewhere (a replayed script), as `call` would have. */
  record(call: ToolCall, outcome: ToolOutcome): void {
    this.writer.toolCall(call);
    this.writer.toolResult(call, outcome);
  }

  private file(call: ToolCall): string {
    switch (call.name) {
      case "read_file":
        return this.fs.readFile(stringArg(call, "path"));
      case "write_file": {
        const written = this.fs.writeFile(stringArg(call, "path"), stringArg(call, "content"));
        return `wrote ${written.bytes} bytes to ${written.path}`;
      }
      case "list_files": {
        const dir = call.arguments.path === undefined ? "." : stringArg(call, "path");
        return this.fs.list(dir).join("\n");
      }
      case "delete_file":
        return this.fs.remove(stringArg(call, "path")) ? "deleted" : "nothing to delete";
      default:
        throw new TypeError(`unknown tool ${JSON.stringify(call.name)}`);
    }
  }

  private async exec(call: ToolCall): Promise<ToolOutcome> {
    const cwd = call.arguments.cwd === undefined ? undefined : stringArg(call, "cwd");
    const result = await this.fs.exec(call.arguments.command as string[], {
      cwd,
      signal: this.signal,
    });
    const synced = result.synced
      ? `\n[synced: ${result.synced.created.length} created, ${result.synced.updated.length} updated, ${result.synced.deleted.length} deleted]`
      : "";
    const status = result.signal ? `signal ${result.signal}` : `exit ${result.exitCode}`;
    const stderr = result.stderr ? `\n[stderr]\n${result.stderr}` : "";
    return {
      output: `${status}\n${result.stdout}${stderr}${synced}`,
      isError: result.exitCode !== 0,
    };
  }
}

import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const EXAMPLE = fileURLToPath(new URL("../../examples/gateway-loop.mjs", import.meta.url));

/** The example gateway as a child process, and what it printed (one JSON object a line). */
export class GatewayProcess {
  readonly lines: Record<string, unknown>[] = [];
  /** Resolves with the inbound port once the gateway listens; undefined if it died before. */
  readonly port: Promise<number | undefined>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  constructor(home: string, platformUrl: string, leaseMs: number) {
    this.child = spawn(process.execPath, [EXAMPLE, home, platformUrl, "0"], {
      env: { ...process.env, GATEWAY_LEASE_MS: String(leaseMs), GATEWAY_TURN_MS: "40" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    this.port = new Promise((resolve) => {
      createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
        const line = JSON.parse(text) as Record<string, unknown>;
        this.lines.push(line);
        if (typeof line.listening === "number") resolve(line.listening);
      });
      this.exited.then(() => resolve(undefined));
    });
  }

  /** kill -9: no handler runs, nothing is flushed or released. Rejects if it had died by itself. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    const { code, signal } = await this.exited;
    if (signal !== "SIGKILL") throw new Error(`gateway exited by itself with ${code ?? signal}`);
  }

  /** A clean stop; rejects when the gateway exits with an error. */
  async stop(): Promise<void> {
    this.child.kill("SIGTERM");
    const { code, signal } = await this.exited;
    if (code !== 0) throw new Error(`gateway exited with ${code ?? signal}`);
  }
}

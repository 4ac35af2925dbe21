import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const EXAMPLE = fileURLToPath(new URL("../../examples/cluster-host.mjs", import.meta.url));

export interface HostOptions {
  home: string;
  host: string;
  controlPlane: string;
  replicas: string;
  leaseMs: number;
  syncMs: number;
}

export type Line = Record<string, unknown>;

/** examples/cluster-host.mjs in a process of its own: one host of the cluster. */
export class HostProcess {
  readonly child: ChildProcess;
  /** Lines that answer no command (a stream's acks and durable marks), in order. */
  readonly events: Line[] = [];
  private readonly answers: Line[] = [];
  private waiting: ((line: Line) => void) | undefined;
  private readonly ready: Promise<void>;

  constructor(options: HostOptions) {
    this.child = spawn(
      process.execPath,
      [
        EXAMPLE,
        ...["--home", options.home, "--host", options.host],
        ...["--control-plane", options.controlPlane, "--replicas", options.replicas],
        ...["--lease-ms", String(options.leaseMs), "--sync-ms", String(options.syncMs)],
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    let started: () => void;
    this.ready = new Promise((resolve) => {
      started = resolve;
    });
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
      const line = JSON.parse(text) as Line;
      if (line.ready) started();
      else if ("ok" in line) {
        const waiter = this.waiting;
        this.waiting = undefined;
        if (waiter) waiter(line);
        else this.answers.push(line);
      } else this.events.push(line);
    });
  }

  /** Sends one command and resolves with its answer. */
  async send(command: Line): Promise<Line> {
    await this.ready;
    const answer = new Promise<Line>((resolve) => {
      const queued = this.answers.shift();
      if (queued) resolve(queued);
      else this.waiting = resolve;
    });
    this.child.stdin?.write(`${JSON.stringify(command)}\n`);
    return answer;
  }

  /** Starts a command whose answer never comes (a stream). */
  async start(command: Line): Promise<void> {
    await this.ready;
    this.child.stdin?.write(`${JSON.stringify(command)}\n`);
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.child.exitCode === null) this.child.kill(signal);
  }
}

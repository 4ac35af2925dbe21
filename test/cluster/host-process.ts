import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const EXAMPLE = fileURLToPath(new URL("../../examples/cluster-host.mjs", import.meta.url));

/**
 * The longest a command may go unanswered: past the host's own bounds (a durable() gives up after
 * 30 s), so a host that stopped answering fails the test with its command and stderr instead of
 * running into the test's timeout with nothing said.
 */
const ANSWER_TIMEOUT_MS = 40_000;

export interface HostOptions {
  home: string;
  host: string;
  controlPlane: string;
  replicas: string;
  leaseMs: number;
  syncMs: number;
  /** For s3:// replicas: the S3 API's endpoint. */
  s3Endpoint?: string;
}

export type Line = Record<string, unknown>;

interface Waiter {
  resolve: (line: Line) => void;
  reject: (error: Error) => void;
}

/** examples/cluster-host.mjs in a process of its own: one host of the cluster. */
export class HostProcess {
  readonly child: ChildProcess;
  /** Lines that answer no command (a stream's acks and durable marks), in order. */
  readonly events: Line[] = [];
  private readonly answers: Line[] = [];
  private waiting: Waiter | undefined;
  private readonly ready: Promise<void>;
  private stderr = "";
  private exit: string | undefined;

  constructor(private readonly options: HostOptions) {
    this.child = spawn(
      process.execPath,
      [
        EXAMPLE,
        ...["--home", options.home, "--host", options.host],
        ...["--control-plane", options.controlPlane, "--replicas", options.replicas],
        ...["--lease-ms", String(options.leaseMs), "--sync-ms", String(options.syncMs)],
        ...(options.s3Endpoint ? ["--s3-endpoint", options.s3Endpoint] : []),
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    this.child.stderr?.setEncoding("utf8").on("data", (text: string) => {
      this.stderr = (this.stderr + text).slice(-4_000);
      process.stderr.write(text.replace(/^(?=.)/gm, `[host ${options.host}] `));
    });
    let started: () => void;
    let failed: (error: Error) => void;
    this.ready = new Promise((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    this.ready.catch(() => {}); // Seen by the next send().
    this.child.on("exit", (code, signal) => {
      this.exit = signal ? `killed by ${signal}` : `exited with ${code}`;
      const error = this.failure("before answering");
      failed(error);
      this.take()?.reject(error);
    });
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        line = { noise: text };
      }
      if (line.ready) started();
      else if ("ok" in line) {
        const waiter = this.take();
        if (waiter) waiter.resolve(line);
        else this.answers.push(line);
      } else this.events.push(line);
    });
  }

  /** Sends one command and resolves with its answer. */
  async send(command: Line, timeoutMs = ANSWER_TIMEOUT_MS): Promise<Line> {
    await this.ready;
    const answer = new Promise<Line>((resolve, reject) => {
      const queued = this.answers.shift();
      if (queued) return resolve(queued);
      const timer = setTimeout(() => {
        this.waiting = undefined;
        reject(this.failure(`within ${timeoutMs} ms to ${JSON.stringify(command)}`));
      }, timeoutMs);
      this.waiting = {
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
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

  private take(): Waiter | undefined {
    const waiter = this.waiting;
    this.waiting = undefined;
    return waiter;
  }

  private failure(what: string): Error {
    const state = this.exit ? `, ${this.exit}` : "";
    const noise = this.events.filter((e) => "noise" in e).map((e) => e.noise);
    return new Error(
      `host ${this.options.host} (pid ${this.child.pid}${state}) gave no answer ${what}` +
        (noise.length ? `\nstdout: ${noise.join("\n")}` : "") +
        (this.stderr ? `\nstderr: ${this.stderr}` : ""),
    );
  }
}

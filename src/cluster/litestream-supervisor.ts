import { type ChildProcess, spawn } from "node:child_process";

/**
 * Runs Litestream ("$@") under a shell that stops it when the host goes, however the host goes.
 * Node cannot ask the kernel for a signal at its death (PR_SET_PDEATHSIG), and a host killed with
 * -9 runs no exit hook, so a plain child would outlive it, shipping an epoch the host no longer
 * owns. The one thing every death does is close the host's file descriptors: the shell's stdin is
 * a pipe from the host, and a watcher reading it to EOF sends the shell SIGTERM, which the shell
 * forwards to Litestream (whose SIGTERM makes a final sync) before waiting for it to exit.
 * Litestream stays the shell's child, not an exec of it, so the pid reported (on stdout, once the
 * traps are set) is Litestream's own (the shell's fork, which execs Litestream at once): a SIGKILL
 * of it stops replication at once. The shell, its watcher and the watcher's cat take about 4 MB
 * of RSS per host (measured), a Node supervisor about 40 MB.
 */
const SCRIPT = `
exec 3<&0 </dev/null
"$@" 3<&- >&2 &
litestream=$!
trap 'stopping=1; kill -TERM "$litestream" 2>/dev/null' TERM INT HUP
{ cat >/dev/null; kill -TERM $$ 2>/dev/null; } <&3 >&2 &
exec 3<&-
echo "$litestream"
exec >&2
wait "$litestream"
# A trapped signal ends a wait before Litestream exits: wait again (at once if it is gone).
while [ -n "$stopping" ]; do stopping=; wait "$litestream"; done
`;

/** A running supervisor and the pid of the Litestream under it (undefined if it did not start). */
export interface SupervisedLitestream {
  supervisor: ChildProcess;
  pid: number | undefined;
}

/** Starts `binary args…` under the supervisor, its stdout and stderr to the `log` descriptor. */
export async function superviseLitestream(
  binary: string,
  args: readonly string[],
  log: number,
): Promise<SupervisedLitestream> {
  const supervisor = spawn("/bin/sh", ["-c", SCRIPT, "litestream-supervisor", binary, ...args], {
    stdio: ["pipe", "pipe", log],
  });
  supervisor.on("error", () => {}); // A spawn failure shows as an exit; durable() then waits.
  supervisor.stdin?.on("error", () => {}); // Nothing is written: EOF is the only message.
  const pid = await firstLine(supervisor);
  return { supervisor, pid: pid === undefined ? undefined : Number(pid) };
}

function firstLine(child: ChildProcess): Promise<string | undefined> {
  return new Promise((resolve) => {
    let text = "";
    const stdout = child.stdout;
    if (!stdout) return resolve(undefined);
    stdout.setEncoding("utf8");
    stdout.on("data", (chunk: string) => {
      text += chunk;
      if (text.includes("\n")) resolve(text.slice(0, text.indexOf("\n")));
    });
    stdout.on("close", () => resolve(undefined));
  });
}

/**
 * Stops Litestream the way a host's death does (EOF on the supervisor's stdin), and resolves once
 * the supervisor, which waits for Litestream, has exited. Past `killAfterMs`, SIGKILLs both.
 */
export async function stopSupervised(
  { supervisor, pid }: SupervisedLitestream,
  killAfterMs: number,
): Promise<void> {
  const started = supervisor.pid !== undefined;
  if (!started || supervisor.exitCode !== null || supervisor.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => supervisor.once("exit", () => resolve()));
  supervisor.stdin?.end();
  const timer = setTimeout(() => {
    if (pid !== undefined) killQuietly(pid);
    supervisor.kill("SIGKILL");
  }, killAfterMs);
  await exited;
  clearTimeout(timer);
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone already.
  }
}

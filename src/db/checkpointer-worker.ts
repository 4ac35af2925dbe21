// Worker-thread entry of the background checkpointer: keeps the WAL of the databases the process
// writes small, on connections of its own, off the threads that write.
import { parentPort, workerData } from "node:worker_threads";
import {
  type CheckpointerData,
  GATE_CHECKPOINTING,
  GATE_HELD,
  type ToCheckpointer,
} from "./checkpointer-protocol.js";
import type { DriverName } from "./driver.js";
import { driverFactory } from "./driver-choice.js";
import { WalKeeper } from "./wal-keeper.js";

const port = parentPort;
if (port === null) throw new TypeError("Expected checkpointer-worker.js to run as a worker thread");
const data = workerData as CheckpointerData;
const ack = new Int32Array(data.ack);
const gate = new Int32Array(data.gate);
const keeper = new WalKeeper({ idleMs: data.idleMs });
let timer: NodeJS.Timeout | null = null;

function tick(): void {
  // Raised first, then the hold read: a writer raising its hold meanwhile sees this flag.
  Atomics.store(gate, GATE_CHECKPOINTING, 1);
  try {
    if (Atomics.load(gate, GATE_HELD) === 0) keeper.tick(Date.now());
  } finally {
    Atomics.store(gate, GATE_CHECKPOINTING, 0);
    Atomics.notify(gate, GATE_CHECKPOINTING);
  }
  if (keeper.size === 0 && timer !== null) {
    clearInterval(timer);
    timer = null;
  }
}

function acknowledge(seq: number): void {
  Atomics.store(ack, 0, seq);
  Atomics.notify(ack, 0);
}

/** False when the file is gone or unreadable meanwhile: its writer's own close then checkpoints it. */
function hold(path: string, driver: DriverName): boolean {
  try {
    keeper.activate(path, driverFactory(driver), Date.now());
  } catch {
    return false;
  }
  timer ??= setInterval(tick, data.tickMs);
  return true;
}

port.on("message", (message: ToCheckpointer) => {
  switch (message.type) {
    case "active":
      hold(message.path, message.driver);
      return;
    case "adopt":
      hold(message.path, message.driver);
      acknowledge(message.seq);
      return;
    case "release":
      // The last connection to the file: SQLite copies the WAL back and removes it here.
      keeper.drop(message.path);
      acknowledge(message.seq);
      return;
    case "drop":
      keeper.drop(message.path);
      acknowledge(message.seq);
      return;
    case "barrier":
      acknowledge(message.seq);
  }
});

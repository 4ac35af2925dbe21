// Worker-thread entry of the background checkpointer: keeps the WAL of the databases the process
// writes small, on connections of its own, off the threads that write.
import { parentPort, workerData } from "node:worker_threads";
import {
  type CheckpointerData,
  GATE_CHECKPOINTING,
  GATE_HELD,
  type ToCheckpointer,
} from "./checkpointer-protocol.js";
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

port.on("message", (message: ToCheckpointer) => {
  if (message.type === "active") {
    try {
      keeper.activate(message.path, driverFactory(message.driver), Date.now());
    } catch {
      return; // A file gone or unreadable meanwhile: its writer's own close will checkpoint it.
    }
    timer ??= setInterval(tick, data.tickMs);
  } else {
    keeper.drop(message.path);
    Atomics.store(ack, 0, message.seq);
    Atomics.notify(ack, 0);
  }
});

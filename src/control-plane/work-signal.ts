import type { Clock } from "../stores/checks.js";

/** The one name cron's waits are kept under (a signal of their own: queue names are free text). */
export const CRON_SIGNAL = "cron";

/**
 * Wakes `waitForWork` callers of one process. Each backend calls `wake` when it learns of new
 * work: the SQLite one after its own enqueues, the PostgreSQL one on a NOTIFY from any host.
 */
export class WorkSignal {
  private readonly waiters = new Map<string, Set<() => void>>();

  wake(queue: string): void {
    for (const waiter of this.waiters.get(queue) ?? []) waiter();
  }

  /**
   * The waiter is registered before `nextDue` reads the rows, so work enqueued between the read
   * and the wait still wakes it.
   */
  async wait(
    queue: string,
    timeoutMs: number,
    clock: Clock,
    nextDue: () => Promise<number | null>,
  ): Promise<boolean> {
    let settle: (woken: boolean) => void = () => {};
    const woken = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const waiter = () => settle(true);
    const set = this.waiters.get(queue) ?? new Set();
    this.waiters.set(queue, set.add(waiter));
    let timer: NodeJS.Timeout | undefined;
    try {
      const due = await nextDue();
      const now = clock();
      if (due !== null && due <= now) return true;
      const untilDue = due === null ? Number.POSITIVE_INFINITY : due - now;
      timer = setTimeout(() => settle(untilDue <= timeoutMs), Math.min(timeoutMs, untilDue));
      return await woken;
    } finally {
      clearTimeout(timer);
      set.delete(waiter);
      if (set.size === 0) this.waiters.delete(queue);
    }
  }
}

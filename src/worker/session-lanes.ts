/**
 * One turn per session at a time: a turn on a key starts when the turn before it on the same key
 * has settled (however it ended); turns on different keys do not wait for each other.
 */
export class SessionLanes {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with a turn running or waiting. */
  get size(): number {
    return this.tails.size;
  }
}

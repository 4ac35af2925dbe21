/** A method of a synchronous store, as an async interface declares it. */
type AsyncMethod<F> = F extends (...args: infer A) => infer R
  ? (...args: A) => Promise<Awaited<R>>
  : never;

export type AsyncFacade<S, K extends keyof S> = { readonly [P in K]: AsyncMethod<S[P]> };

/**
 * The methods `names` of a synchronous store as the control plane's async interface has them:
 * each call runs the store's method at once, its result or its throw a settled promise. The
 * SQLite backend is the home's stores as they are; only their calling convention changes.
 */
export function asyncFacade<S extends object, K extends keyof S>(
  store: S,
  names: readonly K[],
): AsyncFacade<S, K> {
  const facade: Partial<Record<K, unknown>> = {};
  for (const name of names) {
    const method = store[name] as unknown as (...args: unknown[]) => unknown;
    facade[name] = async (...args: unknown[]) => method.apply(store, args);
  }
  return Object.freeze(facade) as AsyncFacade<S, K>;
}

import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * A CommonJS package loaded on its first use. A synchronous API that needs a package only on
 * some calls (croner for cron schedules, json5 for a legacy file that is not plain JSON) should
 * not make every `import("agentstate")` pay for loading it: a gateway imports on every start.
 */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(specifier) as T;
    return loaded;
  };
}

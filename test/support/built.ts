import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const CLI = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** These suites run the built package as users do; `npm test` builds it first. */
export function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error("dist/ is missing: run `npm run build` before these tests");
}

/** The built package's entry, loaded at run time: the type checker runs before the build exists. */
export async function importBuilt<T>(): Promise<T> {
  requireBuild();
  const entry = new URL("../../dist/index.js", import.meta.url).href;
  return (await import(entry)) as T;
}

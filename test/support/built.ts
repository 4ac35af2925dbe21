import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const CLI = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** These suites run the built package as users do; `npm test` builds it first. */
export function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error("dist/ is missing: run `npm run build` before these tests");
}

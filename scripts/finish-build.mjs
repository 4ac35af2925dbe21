// After tsc: copy the committed schema files next to the compiled code (the migration runner
// finds them beside itself, in src/ under tests and in dist/ once built), the dashboard's static
// files likewise (the server serves the web/ directory beside its own), and make the CLI runnable.
import { chmodSync, cpSync, rmSync } from "node:fs";

// Replaced, not merged: a schema file renamed or removed in src/ must not linger in dist/, where
// the migration runner would apply it (or refuse the numbering).
for (const dir of ["db/schema", "web"]) {
  rmSync(`dist/${dir}`, { recursive: true, force: true });
  cpSync(`src/${dir}`, `dist/${dir}`, { recursive: true });
}
chmodSync("dist/cli/main.js", 0o755);

// What a gateway pays on every start: `import("agentstate")`, and process start → the first read
// of a home (open it, read one kv entry). Each sample is a fresh Node process, timed from spawn to
// exit; the floor is the same process doing the bare work (Node alone; Node + the SQLite driver
// opening the database and reading the row), interleaved round by round.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  compare,
  fmtRatio,
  fmtUs,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const ENTRY = fileURLToPath(new URL("../dist/index.js", import.meta.url));
const SAMPLES = QUICK ? 3 : 15;

function spawnNode(script, args = []) {
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", script, ...args], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (result.status !== 0) throw new Error(`bench child failed: ${script.slice(0, 80)}`);
}

const IMPORT = `await import(${JSON.stringify(ENTRY)});`;
const FIRST_READ = `
  const { openStateHome } = await import(${JSON.stringify(ENTRY)});
  const home = openStateHome({ home: process.argv[1], create: false });
  if (home.kv.get("bench", "greeting") !== "hello") process.exit(1);
  home.close();`;
// The bare floor on the engine the library picks in this runtime: node:sqlite where it is forced
// (the Node 24 run), better-sqlite3 otherwise.
const BARE_READ =
  process.env.AGENTSTATE_SQLITE_DRIVER === "node"
    ? `
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(process.argv[1] + "/state/state.sqlite");
  db.exec("PRAGMA journal_mode = WAL");
  const row = db.prepare("SELECT value_json FROM kv WHERE scope = 'bench' AND key = 'greeting'").get();
  if (JSON.parse(row.value_json) !== "hello") process.exit(1);
  db.close();`
    : `
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(process.argv[1] + "/state/state.sqlite");
  db.pragma("journal_mode = WAL");
  const row = db.prepare("SELECT value_json FROM kv WHERE scope = 'bench' AND key = 'greeting'").get();
  if (JSON.parse(row.value_json) !== "hello") process.exit(1);
  db.close();`;

async function seedHome(dir) {
  const { openStateHome } = await import(ENTRY);
  const home = openStateHome({ home: dir });
  home.kv.set("bench", "greeting", "hello");
  home.close();
}

export async function run() {
  return withTempDir("startup", async (dir) => {
    const home = join(dir, "home");
    await seedHome(home);
    progress(`startup: ${SAMPLES} processes per case`);
    const cases = {
      node: { iterations: 1, rounds: SAMPLES, fn: () => spawnNode("") },
      import: { iterations: 1, rounds: SAMPLES, fn: () => spawnNode(IMPORT) },
      bareRead: { iterations: 1, rounds: SAMPLES, fn: () => spawnNode(BARE_READ, [home]) },
      firstRead: { iterations: 1, rounds: SAMPLES, fn: () => spawnNode(FIRST_READ, [home]) },
    };
    const r = compare(cases, { rounds: SAMPLES });
    const importCost = r.import.p50 - r.node.p50;
    const rows = [
      ["Node alone (floor)", fmtUs(r.node.p50), fmtUs(r.node.p99), "1.00x"],
      [
        'import("agentstate")',
        fmtUs(r.import.p50),
        fmtUs(r.import.p99),
        fmtRatio(r.import.p50 / r.node.p50),
      ],
      [
        "start → first read, bare driver (floor)",
        fmtUs(r.bareRead.p50),
        fmtUs(r.bareRead.p99),
        "1.00x",
      ],
      [
        "start → first read, openStateHome + kv.get",
        fmtUs(r.firstRead.p50),
        fmtUs(r.firstRead.p99),
        fmtRatio(r.firstRead.p50 / r.bareRead.p50),
      ],
    ];
    const markdown = [
      "## startup",
      "",
      `Fresh processes, ${SAMPLES} per case, interleaved; each timed from spawn to exit. The import's own cost is the`,
      `import p50 less Node's: **${fmtUs(importCost)}** (target ≤ 150 ms).`,
      "",
      table(["case", "p50", "p99", "÷ floor p50"], rows),
    ].join("\n");
    return {
      name: "startup",
      markdown,
      targets: [
        {
          name: "import cost (import p50 − Node p50) ≤ 150 ms",
          value: fmtUs(importCost),
          met: importCost <= 150_000,
        },
      ],
    };
  });
}

await runIfMain(import.meta.url, run);

// Runs the benchmark modules one after another, each in its own Node process (so one module's
// heap — the legacy sessions.json at 100,000 entries is hundreds of MB — cannot slow the next),
// prints their sections and writes bench/RESULTS.md.
//
//   npm run bench                      all modules (builds first)
//   node bench/run.mjs append patch    a subset, in the order given
//   BENCH_QUICK=1 npm run bench        a smoke run with small sizes
//   BENCH_RUNTIMES=host npm run bench  only the host Node (default: host and the pinned Node 24)
//
// The modules in DRIVER_MODULES run once per runtime: the host Node (better-sqlite3 on Node 20)
// and the Node 24 devDependency with node:sqlite forced, so both engines are measured in one run.
//
// A module is any bench/*.mjs other than the helpers (HELPERS below): it exports
// `run()` returning `{ name, markdown, targets: [{ name, value, met }] }` and ends with
// `await runIfMain(import.meta.url, run)`.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, release, tmpdir, totalmem, type } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fmtBytes, QUICK, table } from "./lib.mjs";

const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));
/** Files in bench/ that are helpers, not modules. */
const HELPERS = new Set([
  "lib.mjs",
  "fixtures.mjs",
  "run.mjs",
  "today-layout.mjs",
  "append-child.mjs",
]);
/** Modules run first, in this order; any other bench/*.mjs follows in name order. */
const FIRST = ["append", "patch", "tail", "search"];

/** Every bench module in bench/: each *.mjs file but the helpers (no hand-kept list). */
function discoverModules() {
  const found = readdirSync(BENCH_DIR)
    .filter((file) => file.endsWith(".mjs") && !HELPERS.has(file))
    .map((file) => file.slice(0, -".mjs".length))
    .sort();
  return [
    ...FIRST.filter((name) => found.includes(name)),
    ...found.filter((n) => !FIRST.includes(n)),
  ];
}

const MODULES = discoverModules();
/** Measured on each engine. */
const DRIVER_MODULES = new Set([
  "append",
  "patch",
  "tail",
  "search",
  "backup",
  "doctor",
  "startup",
  "wal",
]);

/**
 * The runtimes to measure on. `npm run bench` starts this script on npm's PATH, where the pinned
 * Node 24 shadows the host's `node`, so both are named explicitly.
 */
function runtimes() {
  const host = {
    label: "host",
    binary: process.env.npm_node_execpath || process.execPath,
    env: {},
  };
  if (process.env.BENCH_RUNTIMES === "host") return [host];
  const pkg = createRequire(import.meta.url).resolve("node/package.json");
  const node24 = {
    label: "node",
    binary: join(dirname(pkg), "bin", "node"),
    env: { AGENTSTATE_SQLITE_DRIVER: "node" },
  };
  return host.binary === node24.binary ? [node24] : [host, node24];
}
const RUNTIMES = runtimes();

function chosenModules(args) {
  const names = args.filter((a) => !a.startsWith("-"));
  const unknown = names.filter((n) => !MODULES.includes(n));
  if (unknown.length > 0) {
    process.stderr.write(
      `Unknown bench module: ${unknown.join(", ")}. Known: ${MODULES.join(", ")}\n`,
    );
    process.exit(2);
  }
  return names.length > 0 ? names : MODULES;
}

function runModule(name, runtime) {
  const out = join(tmpdir(), `agentstate-bench-${process.pid}-${name}-${runtime.label}.json`);
  const started = Date.now();
  process.stderr.write(`\n=== bench: ${name} (${runtime.label}) ===\n`);
  const child = spawnSync(
    runtime.binary,
    ["--max-old-space-size=6144", join(BENCH_DIR, `${name}.mjs`), "--json-out", out],
    { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, ...runtime.env } },
  );
  const seconds = (Date.now() - started) / 1000;
  let section;
  try {
    if (child.status === 0) section = JSON.parse(readFileSync(out, "utf8"));
  } catch {
    // No result file: the module did not hand back a section; reported as failed below.
  } finally {
    rmSync(out, { force: true });
  }
  if (section === undefined) {
    const why =
      child.error?.message ??
      (child.status === 0 ? "no result written" : `exit code ${child.status ?? child.signal}`);
    return {
      name,
      seconds,
      failed: true,
      driver: runtime.label,
      markdown: `## ${name}\n\n**FAILED** (${why}); see the run's stderr.`,
      targets: [],
    };
  }
  const engine = `**Engine:** ${section.driver} (SQLite ${section.sqlite}, Node ${section.node}).`;
  const markdown = section.markdown.replace(/^(## [^\n]*\n)/, `$1\n${engine}\n`);
  return { targets: [], ...section, markdown, name, seconds };
}

const loadAtStart = loadavg()[0];

function betterSqliteVersion() {
  try {
    const file = join(BENCH_DIR, "..", "node_modules", "better-sqlite3", "package.json");
    return JSON.parse(readFileSync(file, "utf8")).version;
  } catch {
    return "not installed";
  }
}

function engines(sections) {
  const seen = new Map();
  for (const s of sections.filter((x) => x.sqlite)) {
    const via = s.driver === "node" ? "node:sqlite" : `better-sqlite3 ${betterSqliteVersion()}`;
    seen.set(s.driver, `SQLite ${s.sqlite} via ${via} on Node ${s.node}`);
  }
  return [...seen.values()].join("; ");
}

function machine(sections) {
  const cpu = cpus();
  return [
    `- Date: ${new Date().toISOString()}`,
    `- ${type()} ${release()} (${process.arch})`,
    `- CPU: ${cpu[0]?.model ?? "unknown"} × ${cpu.length} logical cores; memory ${fmtBytes(totalmem())}`,
    `- Engines: ${engines(sections)}; temp dirs under ${tmpdir()}`,
    `- Load average (1 min) at start / end: ${loadAtStart.toFixed(2)} / ${loadavg()[0].toFixed(2)}` +
      " (other processes on the machine show up here; ratios are steadier than absolute numbers)",
  ].join("\n");
}

const HOW_TO_READ = `Each benchmark measures the library call and, in the same run and on the same data, a
**floor** (the bare SQLite or JSON cost of the same work, with the library's schema and pragmas:
WAL, synchronous=NORMAL) and, where one exists, the **legacy** file approach it replaces.
Rounds of the library call, the floor and the legacy approach are interleaved (A B C A B C …) after
a warm-up, so machine noise hits them alike.

- **Throughput ratios** (\`store ÷ floor\` in ops/s or events/s): 1.00 = as fast as the bare floor,
  0.50 = half the floor's throughput.
- **Latency ratios** (\`store ÷ floor\` of p50): 1.00 = no overhead, 2.00 = twice the floor's time.
- **vs legacy**: how many times faster than the legacy file approach (legacy time ÷ store time).
- Latencies: p50 / p99 / max of single operations timed with \`process.hrtime.bigint()\`;
  throughput is operations ÷ wall time of a round, the median round reported.
- Durability differs: WAL with synchronous=NORMAL does not fsync each commit (it fsyncs at
  checkpoints), the legacy sessions.json writer fsyncs every rewrite, the legacy JSONL append never.`;

/** One row per target of a module measured on several engines: each engine's value side by side. */
function driverTable(sections) {
  const drivers = [...new Set(sections.map((s) => s.driver))];
  const rows = new Map();
  for (const s of sections.filter((x) => DRIVER_MODULES.has(x.name))) {
    for (const t of s.targets ?? []) {
      const key = `${s.name}\u0000${t.name}`;
      if (!rows.has(key)) rows.set(key, { bench: s.name, target: t.name, values: {} });
      rows.get(key).values[s.driver] = `${t.value}${t.met ? "" : " (**NO**)"}`;
    }
  }
  return table(
    ["bench", "target", ...drivers],
    [...rows.values()].map((r) => [r.bench, r.target, ...drivers.map((d) => r.values[d] ?? "—")]),
  );
}

function render(sections, totalSeconds) {
  const targets = sections.flatMap((s) =>
    (s.targets ?? []).map((t) => [s.name, s.driver, t.name, t.value, t.met ? "**yes**" : "**NO**"]),
  );
  const failed = sections.filter((s) => s.failed).map((s) => s.name);
  return [
    "# agentstate benchmarks",
    "",
    QUICK
      ? "> **BENCH_QUICK=1 smoke run**: reduced sizes and iterations; the numbers are not representative.\n"
      : "",
    "Written by `npm run bench` (bench/run.mjs); do not edit by hand.",
    `Modules: ${sections.map((s) => `${s.name} on ${s.driver} (${s.seconds.toFixed(0)} s)`).join(", ")}; total ${totalSeconds.toFixed(0)} s.`,
    failed.length > 0 ? `\n**Failed modules: ${failed.join(", ")}.**` : "",
    "",
    "## Machine",
    "",
    machine(sections),
    "",
    "## How to read the tables",
    "",
    HOW_TO_READ,
    "",
    "## Targets",
    "",
    table(["bench", "driver", "target", "measured", "met?"], targets),
    "",
    "## Engines side by side",
    "",
    driverTable(sections),
    "",
    ...sections.map((s) => `${s.markdown}\n`),
  ]
    .join("\n")
    .replace(/\n{3,}/g, "\n\n");
}

const modules = chosenModules(process.argv.slice(2));
const started = Date.now();
const sections = [];
for (const name of modules) {
  for (const runtime of DRIVER_MODULES.has(name) ? RUNTIMES : RUNTIMES.slice(0, 1)) {
    const section = runModule(name, runtime);
    sections.push(section);
    process.stdout.write(`\n${section.markdown}\n`);
  }
}
const markdown = render(sections, (Date.now() - started) / 1000);
writeFileSync(join(BENCH_DIR, "RESULTS.md"), markdown);
process.stderr.write(`\nWrote ${join(BENCH_DIR, "RESULTS.md")}\n`);
if (sections.some((s) => s.failed)) process.exitCode = 1;

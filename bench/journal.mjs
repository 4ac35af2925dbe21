// What the rollback journal (AGENTSTATE_JOURNAL_MODE=delete, for NFS/SMB/overlayfs/virtiofs/9p/
// FUSE where WAL is refused) costs against WAL: commit throughput of small write transactions,
// and whether a writer can commit while a reader is in the middle of a read transaction.
import { join } from "node:path";
import { openDatabase } from "../dist/db/database.js";
import {
  fmtRate,
  fmtRatio,
  median,
  progress,
  QUICK,
  runIfMain,
  table,
  withTempDir,
} from "./lib.mjs";

const COMMITS = QUICK ? 100 : 1000;
const ROUNDS = QUICK ? 1 : 3;

function commitsPerSecond(path, journalMode) {
  const db = openDatabase({ path, role: "global", journalMode });
  const insert = db.prepare("INSERT OR REPLACE INTO kv VALUES ('bench', ?, '1', ?)");
  const started = process.hrtime.bigint();
  for (let i = 0; i < COMMITS; i++) db.tx(() => insert.run(`k${i}`, i));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  db.close();
  return COMMITS / seconds;
}

/** A writer commits while another connection holds a read transaction open: done, or busy. */
function commitBesideReader(path, journalMode) {
  const reader = openDatabase({ path, role: "global", journalMode });
  const writer = openDatabase({ path, role: "global", journalMode });
  writer.exec("PRAGMA busy_timeout = 100");
  reader.exec("BEGIN");
  reader.prepare("SELECT count(*) FROM kv").get();
  try {
    writer.tx(() =>
      writer.prepare("INSERT OR REPLACE INTO kv VALUES ('bench', 'x', '2', 0)").run(),
    );
    return "commits";
  } catch (error) {
    return error.code === "E_BUSY" ? "waits for the reader (busy after the timeout)" : error.code;
  } finally {
    reader.exec("COMMIT");
    reader.close();
    writer.close();
  }
}

export async function run() {
  const rows = [];
  const rates = {};
  for (const mode of ["wal", "rollback"]) {
    progress(`journal: ${mode}`);
    rates[mode] = await withTempDir(`journal-${mode}`, (dir) => {
      const samples = [];
      for (let round = 0; round < ROUNDS; round++) {
        samples.push(commitsPerSecond(join(dir, `r${round}.sqlite`), mode));
      }
      const beside = commitBesideReader(join(dir, "r0.sqlite"), mode);
      return { rate: median(samples), beside };
    });
    rows.push([mode, fmtRate(rates[mode].rate), rates[mode].beside]);
  }
  const ratio = rates.rollback.rate / rates.wal.rate;
  const markdown = [
    "## Journal mode",
    "",
    `${COMMITS} single-row write transactions (\`db.tx\`, \`synchronous=NORMAL\`) per round; the`,
    "median round. A rollback journal syncs the journal and the database at every commit, and a",
    "writer cannot commit while any reader is inside a read transaction (nor can anyone read while",
    "it commits); WAL syncs only at checkpoints and lets readers and one writer run side by side.",
    "",
    table(["journal", "commits/s", "a commit beside an open read"], rows),
    "",
    `rollback ÷ WAL throughput: ${fmtRatio(ratio)}`,
  ].join("\n");
  return { name: "journal", markdown, targets: [] };
}

await runIfMain(import.meta.url, run);

// Run by driver tests in a child process of one Node binary, on the built package. The engine is
// whatever that process chooses (AGENTSTATE_SQLITE_DRIVER as the parent set it).
//   choice                  -> { node, driver } or { error: { code, message } }
//   write <home> <word>     -> writes a session with an event containing <word>, a VFS blob, a kv row
//   read <home> <word>      -> what the home holds: search hits, the blob's bytes (hex), the kv row
import { createHash } from "node:crypto";

const [action, home, word, forced] = process.argv.slice(2);
const dist = new URL("../../dist/", import.meta.url);
const { openStateHome } = await import(new URL("index.js", dist).href);
const { chooseDriver } = await import(new URL("db/driver-choice.js", dist).href);

const BLOB = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7 + 3) % 256));

function out(value) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

try {
  if (action === "choice") {
    out({ node: process.versions.node, driver: chooseDriver() });
  } else if (action === "open") {
    const opened = openStateHome({ home, ...(forced ? { driver: forced } : {}) });
    out({
      node: process.versions.node,
      driver: opened.db.driverName,
      agent: opened.agent("main").db.driverName,
    });
    opened.close();
  } else if (action === "write") {
    const h = openStateHome({ home });
    const session = h.sessions.start("main", "agent:main:main");
    const scope = { agentId: "main", sessionId: session.sessionId };
    h.transcripts.append(scope, {
      type: "message",
      message: { role: "user", content: `water the ${word}` },
    });
    h.agent("main").vfs.namespace("scratch").writeFile("/blob.bin", BLOB);
    h.kv.set("test", "written-by", h.db.driverName);
    out({ driver: h.db.driverName, sessionId: session.sessionId });
    h.close();
  } else if (action === "read") {
    const h = openStateHome({ home, create: false });
    const hits = h.transcripts.search(word);
    const blob = h.agent("main").vfs.namespace("scratch").readFile("/blob.bin");
    out({
      driver: h.db.driverName,
      hits: hits.map((hit) => ({ sessionId: hit.sessionId, snippet: hit.snippet })),
      blobIsBuffer: Buffer.isBuffer(blob),
      blobSha: createHash("sha256").update(blob).digest("hex"),
      writtenBy: h.kv.get("test", "written-by"),
    });
    h.close();
  }
} catch (error) {
  out({ error: { code: error.code, name: error.name, message: error.message } });
}

// One gateway host of a cluster, driven by JSON lines on stdin (one answer line each on stdout).
// Run a PostgreSQL, then on one machine, in two terminals:
//   node examples/cluster-host.mjs --home /tmp/host-a --host a --control-plane postgres://… --replicas /tmp/replicas
//   node examples/cluster-host.mjs --home /tmp/host-b --host b --control-plane postgres://… --replicas /tmp/replicas
// and type, e.g.: {"op":"open","agent":"x"}  {"op":"append","agent":"x","text":"hi","durable":true}
// Other ops: enqueue (a delivery fenced by the agent's epoch), stream (appends until
// killed, a durable() every `every` appends), fill (grows the agent to about `mb` MB of messages,
// then waits for its replica), count (the agent's events), release, close.
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { openClusterHome } from "agentstate";

const { values } = parseArgs({
  options: {
    home: { type: "string" },
    host: { type: "string" },
    "control-plane": { type: "string" },
    replicas: { type: "string" },
    "lease-ms": { type: "string", default: "10000" },
    "sync-ms": { type: "string", default: "1000" },
    // For --replicas s3://bucket/prefix on MinIO, R2 or another S3-compatible store; the keys
    // come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
    "s3-endpoint": { type: "string" },
  },
});

const home = await openClusterHome({
  home: values.home,
  cluster: {
    controlPlane: values["control-plane"],
    host: values.host,
    replicas: values.replicas,
    ...(values["s3-endpoint"] ? { s3: { endpoint: values["s3-endpoint"] } } : {}),
    leaseMs: Number(values["lease-ms"]),
    syncIntervalMs: Number(values["sync-ms"]),
  },
});
const agents = new Map();
const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const ops = {
  async open({ agent }) {
    const opened = await home.openAgent(agent);
    agents.set(agent, opened);
    return { epoch: opened.lease.epoch, litestreamPid: home.replicatorPid };
  },
  async append({ agent, text, durable }) {
    const opened = agents.get(agent);
    opened.transcripts.append("main", { type: "note", text });
    if (durable) await opened.durable();
    return {};
  },
  async enqueue({ agent, id }) {
    const { lease } = agents.get(agent);
    await home.controlPlane.queue.enqueue("outbound", { id, payload: { agent } }, { fence: lease });
    return {};
  },
  async stream({ agent, every }) {
    // Appends never wait for durable(): the marks say which appends the replica held, and when.
    const opened = agents.get(agent);
    for (let i = 0; ; i++) {
      opened.transcripts.append("main", { type: "note", text: `e${i}` });
      say({ acked: i, at: Date.now() });
      if (i % every === every - 1) {
        const upTo = i;
        opened.durable().then(() => say({ durable: upTo }));
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  },
  async fill({ agent, mb }) {
    // Plain words with a skewed frequency, 200 user messages a transaction: search indexes them
    // as it would a real agent's, so the file is what a restore would meet.
    const opened = agents.get(agent);
    const words = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
    let seed = 7;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    const text = () =>
      Array.from({ length: 150 }, () => words[Math.floor(random() ** 2 * words.length)]).join(" ");
    const size = () => opened.db.pragma("page_count") * opened.db.pragma("page_size");
    let events = 0;
    while (size() < mb * 1024 * 1024) {
      const batch = Array.from({ length: 200 }, () => ({
        type: "message",
        message: { role: "user", content: [{ type: "text", text: text() }] },
      }));
      opened.transcripts.appendMany(`fill-${Math.floor(events / 2000)}`, batch);
      events += batch.length;
      // Lets the lease renewals run between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const started = Date.now();
    await opened.durable();
    return { events, bytes: size(), durableMs: Date.now() - started };
  },
  async count({ agent }) {
    const scopes = agents.get(agent).transcripts.listScopes();
    return { events: scopes.reduce((sum, scope) => sum + scope.eventCount, 0) };
  },
  async release({ agent }) {
    return { released: await agents.get(agent).release() };
  },
  async close() {
    await home.close();
    setImmediate(() => process.exit(0));
    return {};
  },
};

say({ ready: true, pid: process.pid });
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "") continue;
  const command = JSON.parse(line);
  try {
    say({ ok: true, ...(await ops[command.op](command)) });
  } catch (error) {
    say({ ok: false, code: error.code ?? "E_UNKNOWN", message: error.message });
  }
}

import type { AwsClient } from "aws4fetch";
import { StateError } from "../db/errors.js";
import { lazyRequire } from "../lazy-require.js";
import type { ReplicaTarget } from "./cluster-options.js";
import type { LitestreamReplica, ReplicaStore } from "./replica-store.js";

type S3Target = Extract<ReplicaTarget, { kind: "s3" }>;

/** Loaded for s3:// replicas only: a home with file replicas never pays for the signer. */
const aws4fetch = lazyRequire<typeof import("aws4fetch")>("aws4fetch");

/**
 * A replica in an S3-compatible bucket, read over the S3 API (ListObjectsV2 and GetObject, signed
 * with SigV4 by aws4fetch over Node's fetch). Credentials are Litestream's: from the environment
 * (`LITESTREAM_ACCESS_KEY_ID` first, as Litestream 0.3 prefers it, else `AWS_ACCESS_KEY_ID`), so
 * they are written nowhere.
 */
export class S3ReplicaStore implements ReplicaStore {
  /**
   * A look is a billed LIST (and a GET of a new segment): four a second at most, against
   * Litestream's sync every second by default.
   */
  readonly pollMs = 250;
  private readonly client: AwsClient;
  private readonly base: string;

  constructor(private readonly target: S3Target) {
    const env = process.env;
    const accessKeyId = env.LITESTREAM_ACCESS_KEY_ID ?? env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = env.LITESTREAM_SECRET_ACCESS_KEY ?? env.AWS_SECRET_ACCESS_KEY;
    if (!accessKeyId || !secretAccessKey) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `s3:// replicas need AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (read by Litestream and by this host)`,
        { details: { bucket: target.bucket } },
      );
    }
    const { AwsClient } = aws4fetch();
    this.client = new AwsClient({
      accessKeyId,
      secretAccessKey,
      sessionToken: env.AWS_SESSION_TOKEN || undefined,
      service: "s3",
      region: target.region,
      retries: 2,
    });
    this.base = bucketBase(target);
  }

  async list(path: string): Promise<string[]> {
    const prefix = `${this.key(path)}/`;
    const names: string[] = [];
    let token: string | undefined;
    do {
      const query = new URLSearchParams({ "list-type": "2", prefix, delimiter: "/" });
      if (token !== undefined) query.set("continuation-token", token);
      const xml = await (await this.request(`${this.base}/?${query}`, path)).text();
      for (const key of tags(xml, "Key")) names.push(key.slice(prefix.length));
      for (const sub of tags(xml, "Prefix").filter((p) => p !== prefix && p.startsWith(prefix))) {
        names.push(sub.slice(prefix.length).replace(/\/$/, ""));
      }
      token =
        tags(xml, "IsTruncated")[0] === "true" ? tags(xml, "NextContinuationToken")[0] : undefined;
    } while (token !== undefined);
    return names;
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    const url = `${this.base}/${this.key(path).split("/").map(encodeURIComponent).join("/")}`;
    const response = await this.request(url, path, true);
    return response.status === 404 ? undefined : new Uint8Array(await response.arrayBuffer());
  }

  litestreamReplica(path: string): LitestreamReplica {
    const { bucket, region, endpoint, forcePathStyle } = this.target;
    const replica: Record<string, string | boolean> = { type: "s3", bucket, path: this.key(path) };
    replica.region = region;
    if (endpoint !== undefined) replica.endpoint = endpoint;
    replica["force-path-style"] = forcePathStyle;
    return replica;
  }

  describe(path: string): string {
    return `s3://${this.target.bucket}/${this.key(path)}`;
  }

  private key(path: string): string {
    return this.target.prefix === "" ? path : `${this.target.prefix}/${path}`;
  }

  private async request(url: string, path: string, missingOk = false): Promise<Response> {
    let response: Response;
    try {
      response = await this.client.fetch(url, { method: "GET" });
    } catch (error) {
      throw this.failure(path, String((error as Error).message), error);
    }
    if (response.ok || (missingOk && response.status === 404)) return response;
    const body = await response.text().catch(() => "");
    const code = tags(body, "Code")[0] ?? "";
    throw this.failure(path, `HTTP ${response.status} ${code}`.trim());
  }

  private failure(path: string, reason: string, cause?: unknown): StateError {
    return new StateError("E_IO", `could not read the replica ${this.describe(path)}: ${reason}`, {
      cause,
      details: { replica: this.describe(path), reason },
    });
  }
}

/** Where the bucket's keys start: `<endpoint>/<bucket>` in path style, else `<bucket>.<host>`. */
function bucketBase({ bucket, region, endpoint, forcePathStyle }: S3Target): string {
  const url = new URL(endpoint ?? `https://s3.${region}.amazonaws.com`);
  const path = url.pathname.replace(/\/+$/, "");
  if (forcePathStyle) return `${url.origin}${path}/${bucket}`;
  return `${url.protocol}//${bucket}.${url.host}${path}`;
}

/** The texts of every `<name>` element: S3's listings are flat enough for this. */
function tags(xml: string, name: string): string[] {
  const found: string[] = [];
  for (const match of xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))) {
    found.push(decodeXml(match[1] as string));
  }
  return found;
}

function decodeXml(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp|#(\d+)|#x([0-9a-f]+));/gi, (all, name, dec, hexa) => {
    if (dec) return String.fromCodePoint(Number(dec));
    if (hexa) return String.fromCodePoint(Number.parseInt(hexa, 16));
    return { lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" }[name as string] ?? all;
  });
}

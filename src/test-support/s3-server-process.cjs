// s3rver on 127.0.0.1 (a free port, printed on stdout) over the directory argv[2], with the
// bucket argv[3]. Run as its own process so that a test blocking its event loop cannot stall it.
const S3rver = require("s3rver");
const FilesystemStore = require("s3rver/lib/stores/filesystem");

// s3rver 3.7.1 finds a delimited listing's common prefixes only among keys one level below the
// prefix: it prunes every deeper directory before looking at its keys, so listing
// `e1/generations/` with delimiter `/` misses `e1/generations/<id>/` (all its keys lie deeper)
// and Litestream finds no generation to restore. S3 groups keys at any depth: list them all and
// group here.
const listObjects = FilesystemStore.prototype.listObjects;
FilesystemStore.prototype.listObjects = async function (bucket, options) {
  const { delimiter, prefix = "" } = options;
  if (!delimiter) return listObjects.call(this, bucket, options);
  const all = await listObjects.call(this, bucket, {
    ...options,
    delimiter: "",
    maxKeys: Infinity,
  });
  const commonPrefixes = new Set();
  const objects = [];
  for (const object of all.objects) {
    const at = object.key.slice(prefix.length).indexOf(delimiter);
    if (at === -1) objects.push(object);
    else commonPrefixes.add(object.key.slice(0, prefix.length + at + delimiter.length));
  }
  const maxKeys = options.maxKeys ?? Infinity;
  return {
    objects: objects.slice(0, maxKeys),
    commonPrefixes: [...commonPrefixes].sort(),
    isTruncated: objects.length > maxKeys,
  };
};

// Requests by client, for tests that count what the product asks of a bucket: Litestream's
// (aws-sdk-go) apart from the rest. `GET /__requests` answers the counts and is not counted.
const counts = { litestream: 0, other: 0 };
const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory,
  configureBuckets: [{ name: bucket }],
});
server.middleware.unshift(async (ctx, next) => {
  if (ctx.path === "/__requests") {
    ctx.body = counts;
    return;
  }
  counts[/aws-sdk-go/i.test(ctx.get("user-agent")) ? "litestream" : "other"]++;
  await next();
});
server.run().then(({ port }) => process.stdout.write(`${port}\n`));

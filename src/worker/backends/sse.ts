/** The `data` of one server-sent event: its `data:` lines joined with newlines. */
function dataOf(block: string): string | null {
  const lines = block
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
  return lines.length === 0 ? null : lines.join("\n");
}

/**
 * The data payloads of a `text/event-stream` body, in order. Comments, `event:` and `id:` lines
 * are skipped; an event split across network chunks is reassembled before it is yielded.
 */
export async function* readSseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (let end = buffer.search(/\r?\n\r?\n/); end >= 0; end = buffer.search(/\r?\n\r?\n/)) {
        const separator = /\r?\n\r?\n/.exec(buffer.slice(end)) as RegExpExecArray;
        const data = dataOf(buffer.slice(0, end));
        buffer = buffer.slice(end + separator[0].length);
        if (data !== null) yield data;
      }
      if (done) break;
    }
    const rest = dataOf(buffer);
    if (rest !== null) yield rest;
  } finally {
    reader.releaseLock();
  }
}

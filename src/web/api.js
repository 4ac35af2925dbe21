// The dashboard's only way to the server: same-origin fetches and EventSources under /api. The
// token, when the server has one, travels as the HttpOnly cookie the sign-in URL set.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** GET `/api/<path>` with query parameters (undefined and "" left out) → parsed JSON. */
export async function api(path, params = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(name, String(value));
  }
  const search = query.toString();
  const url = `/api/${path}${search ? `?${search}` : ""}`;
  const response = await fetch(url, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const error = body?.error ?? {};
    throw new ApiError(
      response.status,
      error.code ?? "E_HTTP",
      error.message ?? response.statusText,
    );
  }
  return body;
}

/** Path segments, each URI-encoded: `apiPath("agents", id, "sessions")`. */
export function apiPath(...parts) {
  return parts.map((p) => encodeURIComponent(String(p))).join("/");
}

/**
 * An EventSource on `/api/<path>` whose `status` callback hears "live" / "reconnecting", and
 * whose handlers get parsed JSON. `close()` ends it.
 */
export function subscribe(path, handlers, status = () => {}) {
  const source = new EventSource(`/api/${path}`);
  source.addEventListener("open", () => status("live"));
  source.addEventListener("error", () =>
    status(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting"),
  );
  for (const [event, handler] of Object.entries(handlers)) {
    source.addEventListener(event, (message) => handler(JSON.parse(message.data)));
  }
  source.addEventListener("failure", () => {
    source.close();
    status("closed");
  });
  return { close: () => source.close() };
}

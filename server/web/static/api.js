// Talking to the folio API: the API key (asked for on a 401, kept in localStorage, sent as a
// Bearer header on every request, images included), the one JSON error shape, and
// server-sent events read from a fetch() body (EventSource cannot send a header).

const KEY_STORE = "folio.apiKey";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let askForKey = async () => {
  throw new ApiError(401, "unauthorized", "This server needs an API key.");
};
let pendingKey = null;

/** Install the function that asks a person for the key: (message) => Promise<key>. */
export function setKeyPrompt(prompt) {
  askForKey = prompt;
}

export function apiKey() {
  try {
    return localStorage.getItem(KEY_STORE) || "";
  } catch {
    return "";
  }
}

export function storeKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORE, key);
    else localStorage.removeItem(KEY_STORE);
  } catch {
    // storage refused (private mode): the key lasts until the page is closed
  }
  window.dispatchEvent(new CustomEvent("folio-key", { detail: { set: Boolean(key) } }));
}

/** Ask for a key once, however many requests were refused at the same time. */
export function promptKey(message) {
  if (!pendingKey) {
    pendingKey = askForKey(message)
      .then((key) => storeKey(key))
      .finally(() => {
        pendingKey = null;
      });
  }
  return pendingKey;
}

export function authHeaders(extra) {
  const headers = new Headers(extra || {});
  const key = apiKey();
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return headers;
}

/** fetch() with the key; a 401 asks for the key and sends the request again. */
export async function request(path, options = {}) {
  for (;;) {
    const used = apiKey();
    const response = await fetch(path, { ...options, headers: authHeaders(options.headers) });
    if (response.status !== 401) return response;
    if (apiKey() !== used) continue; // another request got a new key meanwhile
    await promptKey(
      used ? "That API key was refused. Enter the right one." : "This server needs an API key.",
    );
  }
}

/** The ApiError a failed response carries ({"error": {"code", "message"}}), or one made up. */
export async function errorFrom(response) {
  let code = `http_${response.status}`;
  let message = `${response.status} ${response.statusText || "error"}`;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = String(body.error.code || code);
      message = String(body.error.message || message);
    } else if (body && body.detail) {
      message = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message);
}

export async function getJson(path, options = {}) {
  const response = await request(path, options);
  if (!response.ok) throw await errorFrom(response);
  return response.json();
}

/** An object URL of an image fetched with the key; revoke it when it is replaced. */
export async function imageUrl(path, signal) {
  const response = await request(path, { signal });
  if (!response.ok) throw await errorFrom(response);
  return URL.createObjectURL(await response.blob());
}

function parseEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (data.length) return { event, data: data.join("\n") };
  return block.startsWith(":") ? { comment: block.slice(1).trim() } : null;
}

/** The server-sent events of a response body, as {event, data} objects; with `comments`,
 * comment blocks too, as {comment} (the server's ": connected" says it is subscribed). */
export async function* readEvents(response, { comments = false } = {}) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      for (let end = buffer.search(/\r?\n\r?\n/); end >= 0; end = buffer.search(/\r?\n\r?\n/)) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
        const parsed = parseEvent(block);
        if (parsed && (comments || parsed.comment === undefined)) yield parsed;
      }
    }
  } finally {
    reader.cancel().catch(() => {}); // closes the connection when the reader stops early
  }
}

export function describe(error) {
  if (error instanceof ApiError) return `${error.message} (${error.code})`;
  if (error && error.name === "TypeError") return "The server could not be reached";
  return String((error && error.message) || error);
}

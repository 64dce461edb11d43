// The documents list: GET /documents, then live ingestion events from GET /events (read with
// fetch so the key can be sent); per-page records on demand; drag-and-drop upload; documents
// removed while their files stay (GET /documents/removed), each with a Restore button.

import { apiKey, describe, errorFrom, getJson, promptKey, readEvents, request } from "./api.js";
import { el, fileName, plural, reasonOf, setText } from "./dom.js";
import { documentHref } from "./router.js";
import { forgetDocument } from "./viewer.js";

const $ = (id) => document.getElementById(id);
const docs = new Map(); // doc_id -> {record, progress, row}
const DONE = new Set(["ok", "partial", "failed"]);
export const STATUS_WORDS = {
  queued: "Queued",
  processing: "Processing", // its line says whether it is reading or indexing
  ok: "Ready",
  partial: "Partly read",
  failed: "Failed",
};

let eventsController = null;
let preparing = new Set(); // doc_ids whose answer sentences are still being embedded
let filling = null; // the one being embedded now: {doc_id, done, total} (GET /health)
let healthTimer = null;
const PREPARING_NOTE =
  "Its sentences are being embedded while folio is idle; until then a question about it takes a little longer.";

function enc(value) {
  return encodeURIComponent(value);
}

/** A document's progress after a progress event: its pages are read and indexed at once, and
 * each stage keeps its own count (the line no longer jumps from reading page 96 to indexing
 * page 12 and back). */
export function nextProgress(before, event) {
  const embed = event.stage === "embed";
  return {
    stage: event.stage,
    done: event.pages_done,
    total: event.pages_total,
    rate: event.pages_per_s,
    readRate: embed ? before.readRate : event.pages_per_s,
    read: embed ? before.read : event.pages_done,
    indexed: embed ? event.pages_done : before.indexed,
  };
}

/** A finished or waiting document's line, with no progress events seen ("3 pages · 12 chunks"). */
export function progressLine(record) {
  return progressText(record, {});
}

export function progressText(record, progress) {
  if (record.status === "processing") {
    const total = progress.total || record.pages;
    const done = progress.done ?? record.pages_done;
    // pages are read and indexed at once: the reading line goes on while it has pages left
    const reading = progress.read !== undefined && progress.read < total;
    const verb = progress.stage === "embed" && !reading ? "Indexing" : "Reading";
    if (!total) return `${verb}…`;
    if (progress.read >= total && progress.stage !== "embed") {
      // every page read, the last ones' chunks still being embedded: no stale "Reading page N of N"
      const indexed = progress.indexed;
      return indexed ? `Indexing page ${indexed} of ${total}` : `Indexing ${plural(total, "page")}…`;
    }
    const speed = reading ? progress.readRate : progress.rate;
    const rate = speed ? ` · ${speed.toFixed(1)} pages/s` : "";
    const indexed = reading && progress.indexed ? ` · ${progress.indexed} indexed` : "";
    const page = reading ? progress.read : done;
    if (!page) return `${verb} ${plural(total, "page")}…`; // not "Reading page 0 of 42"
    return `${verb} page ${Math.min(page, total)} of ${total}${rate}${indexed}`;
  }
  if (record.status === "queued") return "Waiting to be read";
  const pages = record.pages ? plural(record.pages, "page") : "";
  const chunks = record.chunks ? plural(record.chunks, "chunk") : "";
  const step = filling && filling.doc_id === record.doc_id && filling.total ? filling : null;
  const share = step ? ` ${Math.floor((100 * step.done) / step.total)}%` : "";
  const answers = preparing.has(record.doc_id) ? `preparing answers${share}` : "";
  return [pages, chunks, answers].filter(Boolean).join(" · ");
}

/** Which documents' answer sentences are still being embedded (GET /health), polled while any
 * are and `more` times again at least (a finished document: the filler may not have seen it). */
async function watchSentences(more = 0) {
  clearTimeout(healthTimer);
  healthTimer = null;
  let progress = null;
  try {
    progress = (await getJson("/health")).answer_sentences || null;
  } catch {
    progress = null; // no index to ask: looked at again after the next finished document
  }
  const pending = new Set(progress ? progress.pending : []);
  const now = progress ? progress.current || null : null;
  const changed = [...docs.keys()].filter(
    (id) =>
      pending.has(id) !== preparing.has(id) || id === filling?.doc_id || id === now?.doc_id,
  );
  preparing = pending;
  filling = now;
  for (const id of changed) paint(docs.get(id));
  if (progress && (!progress.settled || pending.size || more > 0)) {
    healthTimer = setTimeout(() => watchSentences(more - 1), 3000);
  }
}

async function remove(entry) {
  const { doc_id: docId, source } = entry.record;
  if (!window.confirm(`Remove ${source} and its index entries?`)) return;
  try {
    const response = await request(`/documents/${enc(docId)}`, { method: "DELETE" });
    if (!response.ok && response.status !== 404) throw await errorFrom(response);
    dropDocument(docId);
    loadRemoved();
  } catch (error) {
    setText($("docs-status"), `${source} could not be removed: ${describe(error)}`);
  }
}

async function restore(docId, source) {
  try {
    const response = await request(`/documents/${enc(docId)}/restore`, { method: "POST" });
    if (!response.ok && response.status !== 404) throw await errorFrom(response);
    if (response.ok) for (const record of await response.json()) upsert(record);
  } catch (error) {
    setText($("docs-status"), `${source} could not be restored: ${describe(error)}`);
  }
  loadRemoved();
}

function removedRow(docId, stones) {
  const { source } = stones[0];
  return el(
    "li",
    { class: "doc removed-doc", "data-doc-id": docId },
    el(
      "div",
      { class: "doc-head" },
      el("span", { class: "doc-name" }, fileName(source)),
      el("span", { class: "badge" }, "Removed"),
      el(
        "button",
        {
          type: "button",
          class: "quiet restore",
          "aria-label": `Restore ${source}`,
          onclick: () => restore(docId, source),
        },
        "Restore",
      ),
    ),
    ...stones.map((stone) => el("p", { class: "doc-path" }, stone.path)),
  );
}

/** The removed files, one row per document (a document may have been held at several paths). */
async function loadRemoved() {
  let stones;
  try {
    stones = await getJson("/documents/removed");
  } catch (error) {
    setText($("docs-status"), `The removed documents could not be listed: ${describe(error)}`);
    return;
  }
  const byDoc = new Map();
  for (const stone of stones) byDoc.set(stone.doc_id, [...(byDoc.get(stone.doc_id) || []), stone]);
  const rows = [...byDoc].map(([docId, held]) => removedRow(docId, held));
  $("removed").replaceChildren(...rows);
  setText($("removed-title"), `Removed (${rows.length})`);
  $("removed-box").hidden = !rows.length;
}

/** A card's line as text nodes, each date ("2023-07-29") in a span that does not wrap at its
 * hyphens (copying the line gives it unchanged). */
export function unbrokenDates(line) {
  return line
    .split(/(\d{4}-\d{2}-\d{2})/)
    .filter(Boolean)
    .map((part) => (/^\d{4}-\d{2}-\d{2}$/.test(part) ? el("span", { class: "nowrap" }, part) : part));
}

function makeRow(entry) {
  const href = documentHref(entry.record.doc_id);
  return el(
    "li",
    { class: "doc", "data-doc-id": entry.record.doc_id },
    el(
      "div",
      { class: "doc-head" },
      el("a", { class: "doc-name", href, "data-nav": true }),
      el("span", { class: "badge" }),
      el("button", { type: "button", class: "quiet remove", onclick: () => remove(entry) }, "Remove"),
    ),
    el("p", { class: "doc-card", hidden: true }),
    el("progress", { max: 1, value: 0 }),
    el("p", { class: "doc-progress" }),
    el("p", { class: "error doc-errors", hidden: true }),
    el("a", { class: "doc-open", href, "data-nav": true }, "Pages, cards and exports"),
  );
}

function paint(entry) {
  const { record, progress, row } = entry;
  row.querySelector(".doc-name").replaceChildren(fileName(record.source));
  const card = record.card?.summary ?? ""; // how the card reads in a line: DocumentCard.summary
  if (card) row.querySelector(".doc-card").replaceChildren(...unbrokenDates(card));
  row.querySelector(".doc-card").hidden = !card && !row.querySelector(".doc-card").textContent;
  const badge = row.querySelector(".badge");
  setText(badge, STATUS_WORDS[record.status] || record.status);
  badge.className = `badge status-${record.status}`;
  row.dataset.status = record.status;
  row.querySelector(".remove").setAttribute("aria-label", `Remove ${record.source}`);
  const bar = row.querySelector("progress");
  const total = progress.total || record.pages;
  const done = DONE.has(record.status) ? total : (progress.done ?? record.pages_done);
  bar.hidden = record.status !== "processing"; // queued: "Waiting to be read" says it
  if (record.status === "queued" || !total) bar.removeAttribute("value");
  else {
    bar.max = total;
    bar.value = Math.min(done, total);
  }
  bar.setAttribute("aria-label", `Progress of ${record.source}`);
  const note = row.querySelector(".doc-progress");
  setText(note, progressText(record, progress));
  note.title = preparing.has(record.doc_id) && DONE.has(record.status) ? PREPARING_NOTE : "";
  const errors = row.querySelector(".doc-errors");
  setText(errors, (record.errors || []).map((e) => reasonOf(e, record.source)).join("; "));
  errors.hidden = !(record.errors || []).length;
  const open = row.querySelector(".doc-open");
  open.setAttribute("aria-label", `Open ${record.source}: its pages, cards and exports`);
  open.hidden = record.status === "failed" && !record.pages; // not a PDF, empty: no page to show
}

function upsert(record, { progress } = {}) {
  let entry = docs.get(record.doc_id);
  if (!entry) {
    entry = { record, progress: {}, row: null };
    entry.row = makeRow(entry);
    docs.set(record.doc_id, entry);
    $("documents").prepend(entry.row);
  } else {
    entry.record = { ...entry.record, ...record };
  }
  if (progress) entry.progress = progress;
  paint(entry);
  showEmpty();
  return entry;
}

function dropDocument(docId) {
  const entry = docs.get(docId);
  if (entry) entry.row.remove();
  docs.delete(docId);
  forgetDocument(docId);
  showEmpty();
}

function showEmpty() {
  setText($("docs-status"), docs.size ? "" : "No documents yet. Drop a PDF above to add one.");
}

function applyEvent(kind, event) {
  const base = { doc_id: event.doc_id, source: event.source };
  if (kind === "removed") {
    loadRemoved();
    return dropDocument(event.doc_id);
  }
  if (kind === "queued") {
    if (!$("removed-box").hidden) loadRemoved(); // a removed file changed, or was restored
    return upsert({ ...base, status: "queued", errors: [] }, { progress: {} });
  }
  if (kind === "linked") return refreshOne(event.doc_id);
  if (kind === "started") {
    const progress = { stage: "extract", done: 0, total: event.pages_total };
    return upsert({ ...base, status: "processing", pages: event.pages_total }, { progress });
  }
  if (kind === "progress") {
    const progress = nextProgress(docs.get(event.doc_id)?.progress || {}, event);
    return upsert({ ...base, status: "processing" }, { progress });
  }
  if (kind === "finished") {
    upsert(
      {
        ...base,
        status: event.status,
        pages: event.pages_total,
        chunks: event.chunks,
        errors: event.error ? [event.error] : [],
      },
      { progress: {} },
    );
    watchSentences(3);
    return refreshOne(event.doc_id);
  }
  return undefined;
}

async function refreshOne(docId) {
  try {
    const detail = await getJson(`/documents/${enc(docId)}`);
    delete detail.page_summaries;
    upsert(detail);
  } catch (error) {
    if (error.status === 404) dropDocument(docId);
  }
}

async function loadAll() {
  const records = await getJson("/documents");
  const seen = new Set(records.map((r) => r.doc_id));
  for (const docId of [...docs.keys()]) if (!seen.has(docId)) dropDocument(docId);
  for (const record of records) upsert(record); // oldest first, each put on top: newest first
  showEmpty();
  watchSentences();
  await loadRemoved();
}

/** Follow /events, loading the list once the server says the stream is subscribed (so that no
 * change between the list and the stream is missed: events after it are applied in order);
 * reconnect (and reload) when the stream drops. */
async function follow() {
  if (eventsController) eventsController.abort();
  const controller = new AbortController();
  eventsController = controller;
  let wait = 1000;
  while (!controller.signal.aborted) {
    try {
      const response = await request("/events", { signal: controller.signal });
      if (!response.ok) throw await errorFrom(response);
      wait = 1000;
      let loaded = false;
      for await (const message of readEvents(response, { comments: true })) {
        if (!loaded) {
          await loadAll(); // the events sent meanwhile wait in the stream, then apply in order
          loaded = true;
        }
        if (message.comment === undefined) applyEvent(message.event, JSON.parse(message.data));
      }
    } catch (error) {
      if (controller.signal.aborted) return;
      if (error.status === 401) {
        setText($("docs-status"), "The documents need an API key.");
        return; // setting a key starts again
      }
      setText($("docs-status"), `Live updates paused: ${describe(error)}. Retrying…`);
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 15000);
  }
}

function uploadOne(file) {
  const bar = el("progress", { max: 100, value: 0, "aria-label": `Upload of ${file.name}` });
  const note = el("span", { class: "upload-note" }, "Uploading…");
  const item = el("li", { class: "upload" }, el("span", { class: "upload-name" }, file.name), bar, note);
  $("uploads").prepend(item);
  const fail = (message) => {
    item.classList.add("failed");
    bar.hidden = true;
    setText(note, message);
  };
  const send = () => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/documents");
    const key = apiKey();
    if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) bar.value = Math.round((100 * event.loaded) / event.total);
    });
    xhr.addEventListener("error", () => fail("The upload did not reach the server."));
    xhr.addEventListener("load", () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = null;
      }
      if (xhr.status === 401) {
        const message = key ? "That API key was refused. Enter the right one." : undefined;
        promptKey(message || "This server needs an API key.").then(send, () =>
          fail("Not uploaded: an API key is needed."),
        );
        return;
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) {
        bar.hidden = true;
        item.classList.add("done");
        setText(note, body.duplicate ? "Already added" : "Uploaded");
        upsert({ doc_id: body.doc_id, source: body.source, status: body.status });
        setTimeout(() => item.remove(), 8000);
        return;
      }
      const error = body && body.error;
      fail(
        error
          ? `${reasonOf(error.message, file.name)} (${error.code})`
          : `Upload failed: HTTP ${xhr.status}`,
      );
    });
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  };
  send();
}

function uploadAll(files) {
  for (const file of files) uploadOne(file);
}

export function setupDocuments() {
  const drop = $("drop");
  const input = $("file-input");
  $("choose-files").addEventListener("click", () => input.click());
  input.addEventListener("change", () => {
    uploadAll([...input.files]);
    input.value = "";
  });
  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add("over");
    });
  }
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    uploadAll([...(event.dataTransfer ? event.dataTransfer.files : [])]);
  });
  // a file dropped beside the zone must not navigate away from the page
  window.addEventListener("dragover", (event) => event.preventDefault());
  window.addEventListener("drop", (event) => event.preventDefault());
  window.addEventListener("folio-key", () => follow());
  follow();
}

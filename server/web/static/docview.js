// A document's own view (`/?doc=ID`): its name, status and card, its exports, a table of its
// pages (engine, route, errors) and its page cards in a grid across the whole width, large
// enough to read the boxes on; followed live (GET /documents/{id}/events) while it is read.

import { describe, errorFrom, getJson, readEvents, request } from "./api.js";
import { documentCards } from "./cards.js";
import { STATUS_WORDS, progressLine, unbrokenDates } from "./documents.js";
import { el, fileName, reasonOf, setText } from "./dom.js";

const $ = (id) => document.getElementById(id);
const DONE = new Set(["ok", "partial", "failed"]);
const EXPORTS = [
  ["JSON", "json", ".json"],
  ["Markdown", "markdown", ".md"],
  ["Text", "text", ".txt"],
  ["Searchable PDF", "searchable.pdf", ".searchable.pdf"],
  ["Docling JSON", "docling", ".docling.json"],
];

function enc(value) {
  return encodeURIComponent(value);
}

function pagesTable(detail) {
  const rows = (detail.page_summaries || []).map((p) =>
    el(
      "tr",
      {},
      el("th", { scope: "row" }, String(p.number)),
      el("td", {}, p.status),
      el("td", {}, [p.engine && p.engine.name, p.engine && p.engine.model].filter(Boolean).join(" ")),
      el("td", {}, p.route || ""),
      el("td", {}, (p.errors || []).join("; ")),
    ),
  );
  if (!rows.length) return el("p", { class: "muted" }, "No page has been read yet.");
  return el(
    "table",
    { class: "pages" },
    el("caption", { class: "visually-hidden" }, `Pages of ${detail.source}`),
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ...["Page", "Status", "Engine", "Route", "Errors"].map((h) => el("th", { scope: "col" }, h)),
      ),
    ),
    el("tbody", {}, ...rows),
  );
}

/** The file name a response names (RFC 6266 `filename*` first), else `fallback`. */
function sentName(response, fallback) {
  const header = response.headers.get("Content-Disposition") || "";
  const star = header.match(/filename\*\s*=\s*[^']*'[^']*'([^;]+)/i);
  if (star) {
    try {
      return decodeURIComponent(star[1].trim());
    } catch {
      // not percent-encoded as it should be: the plain name below
    }
  }
  const plain = header.match(/filename\s*=\s*"([^"]*)"/i) || header.match(/filename\s*=\s*([^;]+)/i);
  return plain ? plain[1].trim() : fallback;
}

async function exportAs(detail, path, suffix, label) {
  const status = $("doc-export-status");
  setText(status, `Preparing the ${label} export…`);
  try {
    const response = await request(`/documents/${enc(detail.doc_id)}/${path}`);
    if (!response.ok) throw await errorFrom(response);
    const stem = String(detail.source).replace(/\.[^.]+$/, "") || detail.doc_id.slice(0, 12);
    const name = sentName(response, `${stem}${suffix}`);
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: name });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
    setText(status, `${name} is downloaded.`);
  } catch (error) {
    setText(status, `The ${label} export failed: ${describe(error)}`);
  }
}

function paintExports(detail) {
  const ready = detail.status === "ok" || detail.status === "partial";
  $("doc-exports").replaceChildren(
    el("span", { class: "muted" }, ready ? "Export:" : "Exports are ready once the document is read."),
    ...(ready
      ? EXPORTS.map(([label, path, suffix]) =>
          el(
            "button",
            { type: "button", class: "export", onclick: () => exportAs(detail, path, suffix, label) },
            label,
          ),
        )
      : []),
  );
}

function paintHead(detail) {
  $("doc-title").replaceChildren(fileName(detail.source));
  document.title = `folio — ${detail.source}`;
  const badge = $("doc-badge");
  setText(badge, STATUS_WORDS[detail.status] || detail.status);
  badge.className = `badge status-${detail.status}`;
  $("doc-panel").dataset.status = detail.status;
  const summary = detail.card?.summary ?? "";
  $("doc-summary").replaceChildren(...unbrokenDates(summary));
  $("doc-summary").hidden = !summary;
  setText($("doc-line"), progressLine(detail));
  const errors = (detail.errors || []).map((e) => reasonOf(e, detail.source));
  setText($("doc-errors"), errors.join("; "));
  $("doc-errors").hidden = !errors.length;
}

/** Show document `docId` (scrolled to page `page`); returns the function that leaves it. */
export function showDocument(docId, page) {
  const controller = new AbortController();
  const state = { detail: null, cards: null, pages: 0, timer: null };
  $("doc-cards").replaceChildren();
  $("doc-page-list").replaceChildren();
  $("doc-exports").replaceChildren();
  setText($("doc-export-status"), "");
  setText($("doc-title"), "Loading…");
  setText($("doc-badge"), "");
  $("doc-summary").hidden = true;
  $("doc-errors").hidden = true;
  setText($("doc-line"), "");

  async function load() {
    const detail = await getJson(`/documents/${enc(docId)}`, { signal: controller.signal });
    if (controller.signal.aborted) return;
    state.detail = detail;
    paintHead(detail);
    paintExports(detail);
    $("doc-page-list").replaceChildren(pagesTable(detail));
    const pages = detail.pages || 0;
    if (!pages) {
      const why = detail.status === "failed" ? "It has no page to show." : "No page has been read yet.";
      $("doc-cards").replaceChildren(el("p", { class: "muted" }, why));
    } else if (!state.cards || state.pages !== pages) {
      state.pages = pages;
      state.cards = documentCards($("doc-cards"), docId, detail.source, pages);
      const target = page && $("doc-cards").querySelector(`li.card[data-page="${Number(page)}"]`);
      if (target) target.scrollIntoView({ block: "start" });
    } else {
      state.cards();
    }
  }

  /** Load again at most once a second while events come. */
  function later() {
    if (state.timer) return;
    state.timer = setTimeout(() => {
      state.timer = null;
      load().catch(() => {});
    }, 1000);
  }

  async function follow() {
    try {
      const response = await request(`/documents/${enc(docId)}/events`, { signal: controller.signal });
      if (!response.ok) return;
      for await (const message of readEvents(response)) {
        if (controller.signal.aborted) return;
        if (message.event === "finished" || message.event === "removed") {
          clearTimeout(state.timer);
          state.timer = null;
          await load();
        } else later();
      }
    } catch {
      // the stream broke off (the server stopped, the view was left): the view stays as it is
    }
  }

  load()
    .then(() => {
      if (state.detail && !DONE.has(state.detail.status)) follow();
    })
    .catch((error) => {
      if (error.name === "AbortError") return;
      setText($("doc-title"), "This document could not be shown");
      setText($("doc-line"), describe(error));
    });
  return () => {
    controller.abort();
    clearTimeout(state.timer);
  };
}

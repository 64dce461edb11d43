// Asking: POST /query/stream (tokens, then citations, then the whole response) when the server
// has it, POST /query otherwise; the answer's [n] markers link to their sources, and each source
// shows a crop of the cited region.

import { ApiError, describe, errorFrom, imageUrl, readEvents, request } from "./api.js";
import { el, fileName, setText } from "./dom.js";
import { documentHref } from "./router.js";
import { openCitation } from "./viewer.js";

const $ = (id) => document.getElementById(id);
const MARKER = /\[(\d+)\]/g;

let current = null; // the AbortController of the question being answered
let cropUrls = [];
let shownKey = ""; // which citations the list shows, so a repeat does not fetch crops again

/** The answer text as text nodes, each known [n] a link that opens its source on the page. */
function renderAnswerText(text, citations) {
  const byN = new Map(citations.map((c) => [c.n, c]));
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(MARKER)) {
    const citation = byN.get(Number(match[1]));
    if (!citation) continue;
    parts.push(text.slice(last, match.index));
    parts.push(
      el(
        "a",
        {
          href: `#cite-${citation.n}`,
          class: "marker",
          "aria-label": `Source ${citation.n}: ${citation.source}, page ${citation.page}`,
          onclick: (event) => {
            event.preventDefault();
            openCitation(citation);
          },
        },
        `[${citation.n}]`,
      ),
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  $("answer-text").replaceChildren(...parts.filter((p) => p !== ""));
}

function supportNote(citation) {
  const verdict = citation.support && citation.support.verdict;
  if (!verdict) return null;
  const share = Math.round(100 * (citation.support.lexical || 0));
  return el(
    "span",
    { class: `support support-${verdict}`, title: `${share}% of the claim's terms are in the source` },
    verdict,
  );
}

function citationItem(citation, signal) {
  const where = `${citation.source}, page ${citation.page}`;
  const crop = el("img", { class: "crop", alt: `The cited region of ${where}` });
  const open = () => openCitation(citation);
  const item = el(
    "li",
    { class: "citation", id: `cite-${citation.n}`, "data-n": citation.n },
    el(
      "button",
      {
        type: "button",
        class: "crop-button",
        "aria-label": `Open ${where} with the cited region highlighted`,
        onclick: open,
      },
      crop,
    ),
    el(
      "div",
      { class: "cite-meta" },
      el("span", { class: "n" }, `[${citation.n}]`),
      el(
        "a",
        {
          class: "source",
          href: documentHref(citation.doc_id, citation.page),
          "data-nav": true,
          title: "Open the document at this page: all its pages, its cards and exports",
        },
        fileName(citation.source),
      ),
      el("span", { class: "page" }, `page ${citation.page}`),
      supportNote(citation),
      el(
        "a",
        {
          class: "quiet open-page",
          href: citation.viewer_url,
          target: "_blank",
          rel: "noopener",
          title: "Open the page here; open or copy the link to keep it",
          onclick: (event) => {
            if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
            event.preventDefault();
            open();
          },
        },
        "Show on page",
      ),
    ),
    el("blockquote", { class: "quote" }, citation.quote),
  );
  imageUrl(citation.crop_url, signal)
    .then((url) => {
      if (signal.aborted) {
        URL.revokeObjectURL(url);
        return;
      }
      cropUrls.push(url);
      crop.src = url;
    })
    .catch((error) => {
      if (error.name === "AbortError") return;
      crop.replaceWith(el("p", { class: "error" }, `No crop: ${describe(error)}`));
    });
  return item;
}

function citationsKey(citations) {
  return JSON.stringify(citations.map((c) => [c.n, c.doc_id, c.page, c.bbox, c.quote]));
}

/** The list under the answer, headed `title`; no heading over an empty list. */
function showSources(items, title = "Sources") {
  $("citations").replaceChildren(...items);
  setText($("sources-title"), title);
  $("sources-title").hidden = items.length === 0;
}

function renderCitations(citations, signal) {
  const key = citationsKey(citations);
  if (key === shownKey && citations.length) return;
  shownKey = key;
  for (const url of cropUrls) URL.revokeObjectURL(url);
  cropUrls = [];
  showSources(citations.map((c) => citationItem(c, signal)));
}

function startAnswer() {
  $("answer").hidden = false;
  $("answer-text").replaceChildren();
  renderCitations([], new AbortController().signal);
}

async function streamAnswer(response, signal) {
  let text = "";
  let citations = [];
  for await (const message of readEvents(response)) {
    const data = JSON.parse(message.data);
    if (message.event === "token") {
      text += data.text || "";
      renderAnswerText(text, citations);
    } else if (message.event === "citations") {
      citations = data.citations || [];
      renderCitations(citations, signal);
      renderAnswerText(text, citations);
    } else if (message.event === "done") {
      return data;
    } else if (message.event === "error") {
      const error = data.error || {};
      throw new ApiError(500, error.code || "error", error.message || "The answer failed.");
    }
  }
  if (text) return { answer: text, citations };
  throw new ApiError(502, "stream_ended", "The answer stream ended early.");
}

const TABLE_SEPARATOR = /^\s*\|?(\s*:?-{2,}:?\s*\|)*\s*:?-{2,}:?\s*\|?\s*$/;

/** A chunk's text as a reader reads it: a table's rows without pipes, rules or empty cells. */
function readable(text) {
  return text
    .split("\n")
    .filter((line) => !TABLE_SEPARATOR.test(line))
    .map((line) =>
      line.trim().startsWith("|")
        ? line.split("|").map((cell) => cell.trim()).filter(Boolean).join(" · ")
        : line.trim(),
    )
    .filter(Boolean)
    .join("\n");
}

function shortened(text, length) {
  return text.length > length ? `${text.slice(0, length)}…` : text;
}

/** No answer: say so, and list the nearest passages the search found. */
function showNotFound(result) {
  renderCitations([], new AbortController().signal);
  $("answer-text").replaceChildren(
    el("span", { class: "not-found" }, "The documents do not answer this."),
  );
  const hits = result.hits || [];
  showSources(
    hits.map((hit) =>
      el(
        "li",
        { class: "nearest" },
        el("span", { class: "source" }, `${hit.source}, page ${hit.page}`),
        el("blockquote", { class: "quote" }, shortened(readable(hit.text), 240)),
      ),
    ),
    "Nearest passages",
  );
  const nearest = hits.length ? ` The nearest of ${hits.length} passages are listed.` : "";
  setText($("ask-status"), `No passage supports an answer.${nearest}`);
}

function showResponse(result, signal) {
  if (result.mode === "not_found") {
    showNotFound(result);
    return;
  }
  const citations = result.citations || [];
  renderCitations(citations, signal);
  renderAnswerText(result.answer || "", citations);
  const count = citations.length;
  const from = count ? ` from ${count} source${count === 1 ? "" : "s"}` : "";
  // an extractive answer quotes; say so, since it names no more than its sentences do
  let note = "";
  if (count && result.mode !== "generated" && !result.llm_error) {
    $("ask-status").replaceChildren(
      `Quoted from the documents (${count} source${count === 1 ? "" : "s"}). ` +
        "Connect a language model for written answers: see ",
      el("a", { href: "/?view=settings", "data-nav": true }, "Settings"),
      ".",
    );
    return;
  }
  if (result.mode === "generated") {
    const dropped = (result.checks || []).filter((check) => !check.kept).length;
    note = dropped
      ? `Generated${from}; ${dropped} marker${dropped === 1 ? "" : "s"} that the sources did not back ${dropped === 1 ? "was" : "were"} removed.`
      : `Generated${from}; every marker was checked against its source.`;
  }
  if (result.llm_error) {
    const { code, message } = result.llm_error;
    note = `The language model failed (${message}; ${code}): the answer is extracted${from}.`;
  }
  setText($("ask-status"), note);
}

async function ask(question, topK) {
  if (current) current.abort();
  const controller = new AbortController();
  current = controller;
  const { signal } = controller;
  const init = {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ question, top_k: topK }),
    signal,
  };
  setText($("ask-status"), "Searching…");
  $("ask-button").disabled = true;
  startAnswer();
  try {
    let response = await request("/query/stream", {
      ...init,
      headers: { ...init.headers, Accept: "text/event-stream" },
    });
    if (response.status === 404 || response.status === 405) {
      response = await request("/query", init);
    }
    if (!response.ok) throw await errorFrom(response);
    const type = response.headers.get("Content-Type") || "";
    if (type.startsWith("text/event-stream")) {
      setText($("ask-status"), "Answering…");
      showResponse(await streamAnswer(response, signal), signal);
    } else {
      showResponse(await response.json(), signal);
    }
  } catch (error) {
    if (error.name === "AbortError") return;
    if (error instanceof ApiError && error.status === 422) {
      // the question itself was refused (too long, no words): what to change, not a failure
      const said = error.message.charAt(0).toUpperCase() + error.message.slice(1);
      const reason = /[.!?]$/.test(said) ? said : `${said}.`;
      $("answer-text").replaceChildren(el("span", { class: "refused" }, reason));
      setText($("ask-status"), "The question was not asked.");
      return;
    }
    $("answer-text").replaceChildren(el("span", { class: "error" }, describe(error)));
    setText($("ask-status"), "The question could not be answered.");
  } finally {
    if (current === controller) {
      $("ask-button").disabled = false;
      current = null;
    }
  }
}

export function setupAsk() {
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = $("question").value.trim();
    const topK = Math.min(20, Math.max(1, Number($("top-k").value) || 5));
    if (/[\p{L}\p{N}]/u.test(question)) {
      ask(question, topK);
      return;
    }
    current?.abort();
    startAnswer();
    $("answer").hidden = true; // nothing was asked: no empty "Answer" heading
    setText($("ask-status"), "Type a question with words or numbers in it.");
  });
}

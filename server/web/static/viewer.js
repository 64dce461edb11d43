// The page viewer: a dialog with the rendered page, the cited regions drawn on it by the server
// (so scanned pages work the same), and buttons to walk through the document's pages.

import { describe, getJson, imageUrl } from "./api.js";
import { setText } from "./dom.js";
import { documentHref } from "./router.js";

const $ = (id) => document.getElementById(id);
const pageSizes = new Map(); // doc_id -> Map(page -> {width, height}) in PDF points

// {docId, source, page, pages, highlights: Map(page -> url), template, quote, focus}
let state = null;
let shownUrl = null;
let loading = null;

function enc(value) {
  return encodeURIComponent(value);
}

/** The image URL of each cited page, with the evidence drawn, as the API gives them. */
function highlightsOf(citation) {
  const urls = new Map();
  for (const cited of citation.page_highlights || []) urls.set(cited.page, cited.highlight_url);
  urls.set(citation.page, citation.highlight_url);
  return urls;
}

async function sizes(docId) {
  if (!pageSizes.has(docId)) {
    const detail = await getJson(`/documents/${enc(docId)}`);
    const byPage = new Map();
    for (const p of detail.page_summaries || []) byPage.set(p.number, p);
    pageSizes.set(docId, { pages: detail.pages, byPage });
  }
  return pageSizes.get(docId);
}

/** Scroll the frame so that the cited box is in view (the page may be taller, or zoomed). */
function scrollToFocus(image, page) {
  const frame = $("viewer-frame");
  const info = state && state.sizes && state.sizes.byPage.get(page);
  if (!state.focus || page !== state.page0 || !info || !image.naturalWidth) return;
  const scale = image.clientWidth / info.width;
  frame.scrollTop = Math.max(0, state.focus[1] * scale - frame.clientHeight / 3);
  frame.scrollLeft = Math.max(0, state.focus[0] * scale - 16);
}

async function show(page) {
  state.page = page;
  const image = $("viewer-image");
  const cited = state.highlights.has(page);
  const label = `Page ${page}${state.pages ? ` of ${state.pages}` : ""}`;
  setText($("viewer-page"), label);
  $("viewer-prev").disabled = page <= 1;
  $("viewer-next").disabled = Boolean(state.pages) && page >= state.pages;
  setText($("viewer-status"), "Loading the page…");
  const url = state.highlights.get(page) || state.template.replace("{n}", String(page));
  if (loading) loading.abort();
  const controller = new AbortController();
  loading = controller;
  try {
    const blobUrl = await imageUrl(url, controller.signal);
    if (controller.signal.aborted || state.page !== page) {
      URL.revokeObjectURL(blobUrl);
      return;
    }
    if (shownUrl) URL.revokeObjectURL(shownUrl);
    shownUrl = blobUrl;
    image.alt = `${label} of ${state.source}${cited ? ", the cited region highlighted" : ""}`;
    image.onload = () => scrollToFocus(image, page);
    image.src = blobUrl;
    image.dataset.page = String(page);
    image.dataset.cited = cited ? "true" : "false";
    setText($("viewer-status"), cited ? state.note : "");
  } catch (error) {
    if (error.name === "AbortError") return;
    setText($("viewer-status"), `This page could not be shown: ${describe(error)}`);
  }
}

/** Open the viewer on a citation's page with its regions highlighted (a page card's block passes
 * its own `label` and `note` in place of the citation's number and wording). */
export async function openCitation(citation) {
  const dialog = $("viewer");
  state = {
    docId: citation.doc_id,
    source: citation.source,
    page: citation.page,
    page0: citation.page,
    pages: 0,
    highlights: highlightsOf(citation),
    template: citation.page_url_template,
    focus: citation.bbox,
    sizes: null,
    note: citation.note || "The cited region is highlighted.",
  };
  setText($("viewer-title"), `${citation.source} — ${citation.label || `[${citation.n}]`}`);
  const whole = $("viewer-doc"); // an extraction is not a document of the index: no view of it
  whole.hidden = String(citation.page_url_template || "").startsWith("/extract/");
  whole.href = documentHref(citation.doc_id, citation.page);
  whole.setAttribute("aria-label", `Open ${citation.source}: all its pages, its cards and exports`);
  const quote = $("viewer-quote");
  setText(quote, citation.quote || "");
  quote.hidden = !citation.quote;
  $("viewer-image").removeAttribute("src");
  if (!dialog.open) dialog.showModal();
  const current = state;
  sizes(citation.doc_id)
    .then((s) => {
      if (state !== current) return;
      current.sizes = s;
      current.pages = s.pages;
      $("viewer-next").disabled = current.page >= s.pages;
      setText($("viewer-page"), `Page ${current.page} of ${s.pages}`);
      scrollToFocus($("viewer-image"), current.page);
    })
    .catch(() => {}); // the page count is a nicety; the image says what went wrong
  await show(citation.page);
}

export function setupViewer() {
  const dialog = $("viewer");
  $("viewer-close").addEventListener("click", () => dialog.close());
  $("viewer-doc").addEventListener("click", () => dialog.close());
  $("viewer-zoom").addEventListener("click", () => {
    const zoomed = $("viewer-frame").classList.toggle("zoomed");
    $("viewer-zoom").setAttribute("aria-pressed", String(zoomed));
    scrollToFocus($("viewer-image"), state && state.page);
  });
  $("viewer-prev").addEventListener("click", () => state && show(state.page - 1));
  $("viewer-next").addEventListener("click", () => state && show(state.page + 1));
  dialog.addEventListener("click", (event) => {
    if (event.target !== dialog) return;
    const box = dialog.getBoundingClientRect();
    const inside =
      event.clientX >= box.left &&
      event.clientX <= box.right &&
      event.clientY >= box.top &&
      event.clientY <= box.bottom;
    if (!inside) dialog.close(); // a click on the backdrop
  });
  dialog.addEventListener("close", () => {
    if (loading) loading.abort();
    if (shownUrl) URL.revokeObjectURL(shownUrl);
    shownUrl = null;
    $("viewer-image").removeAttribute("src");
    state = null;
  });
  dialog.addEventListener("keydown", (event) => {
    if (!state) return;
    if (event.key === "ArrowLeft" && state.page > 1) show(state.page - 1);
    if (event.key === "ArrowRight" && (!state.pages || state.page < state.pages)) {
      show(state.page + 1);
    }
  });
}

/** Forget cached page sizes of a document (it was removed or replaced). */
export function forgetDocument(docId) {
  pageSizes.delete(docId);
}

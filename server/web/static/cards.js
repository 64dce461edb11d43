// Page cards: one card per page with its image (loaded when the card is seen), its blocks boxed
// and coloured by type, its text, its Markdown rendered as DOM nodes (never innerHTML), the
// engine and route that read it, and its JSON to download. Used by the Extract panel (from the
// POST /extract stream) and by each document's "Page cards" (GET /documents/{id}/cards, a chunk
// at a time as cards come into view, refreshed while the document is read: a page's blocks and
// text appear once its window is written, a card is redrawn only when it changed). Every URL
// comes from the API.

import { describe, errorFrom, getJson, imageUrl, readEvents, request } from "./api.js";
import { el, plural, setText } from "./dom.js";
import { openCitation } from "./viewer.js";

const $ = (id) => document.getElementById(id);
const KIND = {
  title: "heading",
  section_header: "heading",
  table: "table",
  figure: "figure",
  caption: "caption",
  page_header: "furniture",
  page_footer: "furniture",
  footnote: "furniture",
};
const CHUNK = 20;

const seen = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      seen.unobserve(entry.target);
      entry.target.dispatchEvent(new CustomEvent("card-visible"));
    }
  },
  { rootMargin: "300px" },
);

// ---- Markdown, safely: a small subset (headings, lists, tables, rules, emphasis, code) ----

function inline(text) {
  const out = [];
  for (const part of text.split(/(\*\*[^*]+\*\*|\*[^*]+\*)/)) {
    if (!part) continue;
    if (part.startsWith("**") && part.endsWith("**") && part.length > 4) {
      out.push(el("strong", {}, part.slice(2, -2)));
    } else if (part.startsWith("*") && part.endsWith("*") && part.length > 2) {
      out.push(el("em", {}, part.slice(1, -1)));
    } else out.push(part);
  }
  return out;
}

function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

function pipeTable(lines) {
  const rows = lines.filter((l) => !/^\s*\|?\s*:?-{2,}/.test(l)).map(cells);
  const head = /^\s*\|?\s*:?-{2,}/.test(lines[1] || "") ? rows.shift() : null;
  return el(
    "table",
    {},
    head ? el("thead", {}, el("tr", {}, ...head.map((c) => el("th", {}, ...inline(c))))) : null,
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c) => el("td", {}, ...inline(c)))))),
  );
}

/** An HTML table of the document rebuilt as text-only cells (nothing of it is run or kept). */
function htmlTable(html) {
  const parsed = new DOMParser().parseFromString(html, "text/html");
  const rows = [...parsed.querySelectorAll("tr")].map((tr) =>
    el(
      "tr",
      {},
      ...[...tr.children].map((cell) =>
        el(cell.tagName === "TH" ? "th" : "td", {
          colspan: cell.getAttribute("colspan") && String(Number(cell.getAttribute("colspan")) || 1),
          rowspan: cell.getAttribute("rowspan") && String(Number(cell.getAttribute("rowspan")) || 1),
        }, cell.textContent),
      ),
    ),
  );
  return el("table", {}, el("tbody", {}, ...rows));
}

export function renderMarkdown(markdown) {
  const box = el("div", { class: "md" });
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; ) {
    const line = lines[i];
    if (!line.trim() || /^<!-- page \d+ -->$/.test(line.trim())) {
      i += 1;
    } else if (line.trim().startsWith("|")) {
      const block = [];
      while (i < lines.length && lines[i].trim().startsWith("|")) block.push(lines[i++]);
      box.append(pipeTable(block));
    } else if (/^\s*<table/i.test(line)) {
      const block = [];
      while (i < lines.length && lines[i].trim()) block.push(lines[i++]);
      box.append(htmlTable(block.join("\n")));
    } else if (line.startsWith("```") || line.trim() === "$$") {
      const fence = line.startsWith("```") ? "```" : "$$";
      const block = [];
      for (i += 1; i < lines.length && !lines[i].startsWith(fence); i += 1) block.push(lines[i]);
      i += 1;
      box.append(el("pre", {}, block.join("\n")));
    } else if (/^#{1,6} /.test(line)) {
      const level = line.match(/^#+/)[0].length;
      box.append(el(`h${Math.min(6, level + 3)}`, {}, ...inline(line.replace(/^#+ /, ""))));
      i += 1;
    } else if (line.trim() === "---") {
      box.append(el("hr"));
      i += 1;
    } else if (/^- /.test(line)) {
      const items = [];
      while (i < lines.length && /^- /.test(lines[i])) items.push(lines[i++].slice(2));
      box.append(el("ul", {}, ...items.map((t) => el("li", {}, ...inline(t)))));
    } else {
      const block = [];
      while (i < lines.length && lines[i].trim() && !/^(\||#{1,6} |- |```|\$\$)/.test(lines[i])) {
        block.push(lines[i++]);
      }
      if (!block.length) block.push(lines[i++]);
      box.append(el("p", {}, ...inline(block.join(" "))));
    }
  }
  return box;
}

// ---- one card ----

function pageText(page) {
  return (page.blocks || []).map((b) => b.text).filter(Boolean).join("\n\n");
}

function download(card, source) {
  const blob = new Blob([JSON.stringify(card.page, null, 1)], { type: "application/json" });
  const link = el("a", {
    href: URL.createObjectURL(blob),
    download: `${(source || "page").replace(/\.[^.]+$/, "")}-page-${card.number}.json`,
  });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

function boxes(card, context) {
  const page = card.page;
  if (!page) return [];
  return (page.blocks || []).map((block) => {
    const [x0, y0, x1, y1] = block.bbox;
    const kind = KIND[block.type] || "text";
    const style =
      `left:${(100 * x0) / page.width}%;top:${(100 * y0) / page.height}%;` +
      `width:${(100 * (x1 - x0)) / page.width}%;height:${(100 * (y1 - y0)) / page.height}%`;
    return el("button", {
      type: "button",
      class: `block kind-${kind}`,
      style,
      title: `${block.type}: ${block.text.slice(0, 80)}`,
      "aria-label": `${block.type} on page ${card.number}: open it in the page viewer`,
      "data-kind": kind,
      onclick: () =>
        openCitation({
          doc_id: context.docId,
          source: context.source,
          page: card.number,
          label: `page ${card.number}, ${kind} block`,
          note: "The block is highlighted.",
          bbox: block.bbox,
          quote: block.text.slice(0, 400),
          highlight_url: card.block_urls[block.id],
          page_highlights: [],
          page_url_template: context.template,
        }),
    });
  });
}

/** Fill `node` (an li.card) with `card`; its image is fetched once the card is in view. */
export function fillCard(node, card, context) {
  const failed = card.status === "failed";
  const page = card.page;
  const image = el("img", { alt: `Page ${card.number} of ${context.source}`, class: "thumb-img" });
  const thumb = el("div", { class: "thumb" }, image, ...boxes(card, context));
  if (page) thumb.style.aspectRatio = `${page.width} / ${page.height}`;
  const meta = [card.status, card.engine, card.route].filter(Boolean).join(" · ");
  const text = page ? pageText(page) : "";
  const parts = [
    el("header", { class: "card-head" }, el("strong", {}, `Page ${card.number}`), el("span", { class: "muted card-meta" }, meta)),
    thumb,
    failed || (card.errors || []).length
      ? el("p", { class: failed ? "error card-reason" : "muted card-reason" },
          `${failed ? "Not read: " : ""}${(card.errors || []).join("; ") || "no engine could read it"}`)
      : null,
    page
      ? el("details", { class: "card-text" }, el("summary", {}, "Text"), el("pre", { class: "page-text" }, text))
      : null,
    page ? el("div", { class: "card-md" }, renderMarkdown(card.markdown || "")) : null,
    page
      ? el("button", { type: "button", class: "quiet card-json", onclick: () => download(card, context.source) }, "Download JSON")
      : null,
  ];
  node.replaceChildren(...parts.filter(Boolean));
  node.dataset.page = String(card.number);
  node.dataset.status = card.status;
  node.classList.toggle("failed", failed);
  node.addEventListener(
    "card-visible",
    () => {
      imageUrl(card.image_url)
        .then((url) => {
          image.src = url;
        })
        .catch((error) => setText(thumb, `No image: ${describe(error)}`));
    },
    { once: true },
  );
  seen.observe(node);
  return node;
}

// ---- the Extract panel: cards from the POST /extract stream ----

async function runExtract(form) {
  const list = $("extract-cards");
  const status = $("extract-status");
  const file = $("extract-file").files[0];
  if (!file) return;
  list.replaceChildren();
  setText(status, `Reading ${file.name}…`);
  const body = new FormData();
  body.append("file", file, file.name);
  if (form.pages.value.trim()) body.append("pages", form.pages.value.trim());
  body.append("ocr", form.ocr.value);
  let context = { source: file.name };
  try {
    const response = await request("/extract", { method: "POST", body });
    if (!response.ok) throw await errorFrom(response);
    for await (const message of readEvents(response)) {
      const data = JSON.parse(message.data);
      if (message.event === "started") {
        context = { docId: data.extract_id, source: data.source, template: data.page_url_template };
        list.dataset.pages = String(data.pages.length);
      } else if (message.event === "page") {
        list.append(fillCard(el("li", { class: "card" }), data, context));
        setText(status, `Read ${list.children.length} of ${list.dataset.pages} pages of ${context.source}…`);
      } else if (message.event === "done") {
        setText(status, `${context.source}: ${plural(data.document.page_count, "page")} read (not indexed).`);
        list.dataset.done = "true";
      } else if (message.event === "error") {
        setText(status, `Reading stopped: ${data.error.message}`);
      }
    }
  } catch (error) {
    setText(status, `Not read: ${describe(error)}`);
  }
}

export function setupExtract() {
  const form = $("extract-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    runExtract(form);
  });
}

// ---- a document's page cards: placeholders, filled a chunk at a time as they come into view ----

/** Cards of an indexed document in `box`; returns refresh(), to call when it changes. */
export function documentCards(box, docId, source, pages) {
  const list = el("ol", { class: "cards", "aria-label": `Pages of ${source}` });
  const loaded = new Map(); // chunk start -> true while loaded or loading
  const shown = new Map(); // page number -> the card last drawn, as JSON
  const context = { docId, source, template: null };
  const slots = [];
  for (let n = 1; n <= pages; n += 1) {
    const slot = el("li", { class: "card pending", "data-page": String(n) }, `Page ${n}`);
    slots.push(slot);
    list.append(slot);
  }
  async function load(first) {
    loaded.set(first, true);
    try {
      const body = await getJson(`/documents/${encodeURIComponent(docId)}/cards?first=${first}&last=${first + CHUNK - 1}`);
      context.template = body.page_url_template;
      const reading = body.status === "queued" || body.status === "processing";
      for (const card of body.cards) {
        const slot = slots[card.number - 1];
        const drawn = JSON.stringify(card);
        if (!slot || shown.get(card.number) === drawn) continue;
        // while it is read, a page drawn from its JSON stays (the JSON is being moved into place)
        if (reading && !card.page && slot.dataset.read === "true") continue;
        shown.set(card.number, drawn);
        fillCard(slot, card, context).classList.remove("pending");
        slot.dataset.read = String(Boolean(card.page));
      }
    } catch (error) {
      loaded.delete(first);
      setText(slots[first - 1], `Page ${first}: ${describe(error)}`);
    }
  }
  const watcher = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const n = Number(entry.target.dataset.page);
      const first = n - ((n - 1) % CHUNK);
      watcher.unobserve(entry.target);
      if (!loaded.has(first)) load(first);
    }
  }, { rootMargin: "400px" });
  for (const slot of slots) watcher.observe(slot);
  box.replaceChildren(list);
  return () => {
    for (const first of [...loaded.keys()]) load(first);
  };
}

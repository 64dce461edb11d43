// The page's views, each at its own URL of the one shell at `/` (open without a key): Ask and the
// documents list (`/`), Extract (`/?view=extract`), Settings (`/?view=settings`) and a document
// (`/?doc=ID`, `&page=N` for one of its pages). Links marked `data-nav` switch views in place,
// so that an answer stays while a document is looked at and Back returns to it.

const views = new Map(); // name -> (params) => cleanup function or undefined
let leave = null;

/** The link of a document's own view, at page `page` when given. */
export function documentHref(docId, page) {
  const params = new URLSearchParams({ doc: docId });
  if (page) params.set("page", String(page));
  return `/?${params}`;
}

/** Which view a URL shows, with its parameters. */
export function viewOf(url) {
  const params = new URL(url, window.location.origin).searchParams;
  if (params.get("doc")) return { name: "document", params };
  const name = params.get("view");
  return { name: name === "extract" || name === "settings" ? name : "home", params };
}

/** Register what opening view `name` does: `show(params)` may return a function run on leaving. */
export function onView(name, show) {
  views.set(name, show);
}

export function route() {
  const { name, params } = viewOf(window.location.href);
  if (leave) leave();
  leave = null;
  for (const main of document.querySelectorAll("main.view")) main.hidden = main.dataset.view !== name;
  for (const tab of document.querySelectorAll(".tabs a")) {
    if (tab.dataset.tab === name) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  const show = views.get(name);
  leave = (show && show(params)) || null;
  if (name !== "document") document.title = name === "home" ? "folio" : `folio — ${name}`;
}

export function navigate(href) {
  if (href === window.location.pathname + window.location.search) return;
  window.history.pushState({}, "", href);
  route();
  window.scrollTo(0, 0);
}

export function setupRouter() {
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a[data-nav]") : null;
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    navigate(link.getAttribute("href"));
  });
  window.addEventListener("popstate", route);
}

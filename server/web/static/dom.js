// Building elements without innerHTML: every text the page shows goes in as a text node.

/** `el("a", {href: "#x", class: "y", onclick: fn}, "text", child)`; null children are skipped. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      node.className = value;
    } else if (value === true) {
      node.setAttribute(name, "");
    } else {
      node.setAttribute(name, String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function setText(node, text) {
  node.textContent = text;
}

/** A file name as text with a line-break chance after each `_` and `-`, and after a `.` before a
 * letter (not inside `2020.05.21`), so that a long name wraps between its words, not inside them
 * (copying it gives the name unchanged). */
/** A failure's reason without the file's name it may begin with ("a.pdf: the file is empty"),
 * where the name is shown beside it. */
export function reasonOf(message, name) {
  const lead = `${name}: `;
  return String(message).startsWith(lead) ? String(message).slice(lead.length) : String(message);
}

export function fileName(name) {
  const parts = String(name).split(/(?<=[_-])|(?<=\.)(?=\D)/);
  const out = document.createDocumentFragment();
  parts.forEach((part, i) => {
    out.append(document.createTextNode(part));
    if (i < parts.length - 1) out.append(document.createElement("wbr"));
  });
  return out;
}

export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/* Small helpers for building the page: elements, words for numbers and money, and
   names shown safely (isolated from the text around them, cut to a width, the whole
   name on hover). */

export const $ = (id) => document.getElementById(id);

/** An element: el("p", {class, text, on: {click}, attr: value}, ...children). */
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else if (v === true) e.setAttribute(k, "");
      else e.setAttribute(k, v);
    }
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return e;
}

/** node.replaceChildren, leaving out null, undefined and false. */
export function fill(node, ...kids) {
  node.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false && k !== ""));
}

/** fill, but only when the new children would show something else: a part the table
 * renders again on every update (its results, between two hands) keeps its elements
 * while they are the same, so that a button is not swapped under a finger (a tap
 * that lands between its press and its release on a replaced button is lost).
 * Returns whether it replaced them. */
export function fillIfChanged(node, ...kids) {
  const next = document.createElement(node.tagName);
  fill(next, ...kids);
  if (next.innerHTML === node.innerHTML) return false;
  node.replaceChildren(...next.childNodes);
  return true;
}

/** fill, child by child: a child that would show the same as the one in its place is
 * kept (it never leaves the page), any other put in its place.  A part with a button
 * in each of its children (the seats' "Sit here") renders again on every update of
 * the hand; the boxes that did not change keep their buttons, so a click pressed on
 * one is not lost to an update that came before its release.  Use it only where a
 * child's listeners depend on nothing but what its HTML shows. */
export function fillEach(node, ...kids) {
  const next = kids.flat().filter((k) => k !== null && k !== undefined && k !== false && k !== "");
  const old = Array.from(node.childNodes);
  next.forEach((k, i) => {
    const o = old[i];
    if (!o) node.appendChild(k);
    else if (!(o.nodeType === 1 && k.nodeType === 1 && o.outerHTML === k.outerHTML)) node.replaceChild(k, o);
  });
  for (const o of old.slice(next.length)) o.remove();
}

const fmt = new Intl.NumberFormat("en-US");
export const num = (n) => fmt.format(n);
export const ht = (n) => fmt.format(n) + " HT";
export const signed = (n) => (n > 0 ? "+" : n < 0 ? "\u2212" : "") + fmt.format(Math.abs(n));
export const pct = (bps) => (bps / 100).toLocaleString("en-US", { maximumFractionDigits: 2 }) + "%";
export const plural = (n, one, many) => n + " " + (n === 1 ? one : many || one + "s");

export function parseTime(iso) {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isFinite(t) ? t : null;
}

/** A person's name: in <bdi> (right-to-left text in it cannot reorder what is around
    it), cut to the width CSS gives .pname with an ellipsis, the whole name as its
    title.  Names are plain text (textContent), never HTML. */
export function nameEl(name, extraClass) {
  const text = String(name);
  return el("bdi", { class: "pname" + (extraClass ? " " + extraClass : ""), title: text, dir: "auto" }, text);
}

/** A fingerprint as every page and command shows it: 64 hex digits in groups of four. */
export function fingerprintText(hex) {
  return String(hex || "").replace(/(.{4})(?=.)/g, "$1 ");
}

/** Text made of parts: strings, and {name} for a person's name (shown with nameEl). */
export function partsText(parts) {
  return parts.map((p) => (typeof p === "string" ? p : p.name)).join("");
}

export function partsNodes(parts) {
  return parts.map((p) => (typeof p === "string" ? p : nameEl(p.name)));
}

/** Save text as a file. */
export function download(filename, text, type) {
  const blob = new Blob([text], { type: type || "application/json" });
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: filename, hidden: true });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/* The player's cards, in their groups.  A card is selected with a tap, a click or
   Enter; the selected card moves to another group with that group's "Move here"
   (touch and mouse alike), to a group of its own with "New group", one place with
   the ◀ ▶ buttons or Shift+arrows, or by dragging with a mouse.

   The hand is drawn again on every push (another seat's move too), but a group that
   shows the same is kept (dom.fillEach): a card or "Move here" pressed while another
   seat moved is the same button at its release, so the tap is not lost (a lost tap
   can cost a turn on the clock).  So that a kept button does what a new one would,
   its listeners are the hand box's, installed once, and read what they act on from
   the button's data and the table's state at the moment of the event, never from
   the render that drew it. */
import { $, el, fill, fillEach } from "./dom.js";
import { cardClass, cardFace, cardInfo, wildRankOf } from "./cardview.js";
import { groupKind, moveCard } from "./arranging.js";
import { decksOf } from "./state.js";
import { handMessage } from "./render-table.js";

const KIND = { pure: "pure sequence", impure: "sequence", set: "set" };

/* What the box's listeners act on: the table and the page's controls of the last render. */
const current = { t: null, ctl: null };

/** ctl: {select(id), arrange(arr, focusCard), nudge(id, dir)} from the page. */
export function renderHand(t, ctl) {
  const box = $("hand");
  current.t = t;
  current.ctl = ctl;
  listen(box);
  const hand = t.hand;
  const me = hand && hand.view && hand.view.me;
  if (!me || !hand.arr || me.status !== "playing" || hand.view.phase === "ended") {
    const msg = handMessage(t, hand);
    fill(box, msg ? el("p", { class: "hand-msg", id: "hand-msg" }, msg) : null);
    return;
  }
  const decks = decksOf(t);
  const wr = wildRankOf(hand.view, decks);
  const sel = t.selected;
  const selGroup = sel === null ? -1 : hand.arr.findIndex((g) => g.includes(sel));
  const groups = hand.arr.map((g, gi) => {
    const kind = groupKind(g, decks, wr);
    const label = KIND[kind] || (g.length >= 3 ? "not a group yet" : "");
    const target =
      sel !== null && gi !== selGroup
        ? el("button", { type: "button", class: "move-here", "data-group": gi, title: "Move the selected card to the end of this group" }, "Move here")
        : null;
    return el(
      "div",
      { class: "group" + (kind ? " ok " + kind : ""), role: "group", "data-group": gi, "aria-label": "group " + (gi + 1) + (label ? ", " + label : "") },
      el("div", { class: "group-cards" }, g.map((id) => handCard(t, id, decks, wr, gi))),
      el("div", { class: "group-foot" }, el("span", { class: "group-label" }, label), target),
    );
  });
  const zone = el("div", { class: "group new-group", "data-group": "new", "aria-hidden": "true" }, el("div", { class: "group-cards" }, "drop here for a new group"));
  fillEach(box, ...groups, zone);
}

const bound = new WeakSet();

/** The hand box's listeners, once a box. */
function listen(box) {
  if (bound.has(box)) return;
  bound.add(box);
  const arr = () => {
    const t = current.t;
    return t && t.hand && t.hand.arr ? t.hand.arr : null;
  };
  const cardOf = (e) => (e.target.closest ? e.target.closest("#hand button[data-card]") : null);
  const groupOf = (e) => (e.target.closest ? e.target.closest("#hand .group") : null);
  box.addEventListener("click", (e) => {
    const t = current.t;
    const a = arr();
    if (!t || !a) return;
    const here = e.target.closest ? e.target.closest("#hand button.move-here") : null;
    if (here) {
      const sel = t.selected;
      if (sel !== null && a.flat().includes(sel)) current.ctl.arrange(moveCard(a, sel, Number(here.dataset.group), null), sel);
      return;
    }
    const b = cardOf(e);
    if (b) current.ctl.select(Number(b.dataset.card));
  });
  box.addEventListener("dragstart", (e) => {
    const b = cardOf(e);
    if (!b) return;
    e.dataTransfer.setData("text/plain", b.dataset.card);
    e.dataTransfer.effectAllowed = "move";
    b.classList.add("dragging");
  });
  box.addEventListener("dragend", (e) => {
    const b = cardOf(e);
    if (b) b.classList.remove("dragging");
  });
  box.addEventListener("keydown", (e) => {
    const b = cardOf(e);
    const t = current.t;
    const a = arr();
    if (!b || !a || (e.key !== "ArrowLeft" && e.key !== "ArrowRight")) return;
    e.preventDefault();
    const id = Number(b.dataset.card);
    const dir = e.key === "ArrowLeft" ? -1 : 1;
    if (e.shiftKey) {
      if (t.selected !== id) current.ctl.select(id);
      current.ctl.nudge(id, dir);
    } else {
      const all = a.flat();
      const k = all.indexOf(id) + dir;
      if (k >= 0 && k < all.length) focusCard(all[k]);
    }
  });
  box.addEventListener("dragover", (e) => {
    const g = groupOf(e);
    if (!g) return;
    e.preventDefault();
    g.classList.add("over");
  });
  box.addEventListener("dragleave", (e) => {
    const g = groupOf(e);
    if (g) g.classList.remove("over");
  });
  box.addEventListener("drop", (e) => {
    const g = groupOf(e);
    const a = arr();
    if (!g || !a) return;
    e.preventDefault();
    g.classList.remove("over");
    const card = Number(e.dataTransfer.getData("text/plain"));
    if (!Number.isInteger(card) || !a.flat().includes(card)) return;
    const target = e.target.closest ? e.target.closest("[data-card]") : null;
    let before = target ? Number(target.dataset.card) : null;
    if (target && before !== card) {
      const r = target.getBoundingClientRect();
      if (e.clientX > r.left + r.width / 2) {
        const grp = a[Number(g.dataset.group)] || [];
        const k = grp.indexOf(before);
        before = k >= 0 && k + 1 < grp.length ? grp[k + 1] : null;
      }
    }
    if (before === card) return;
    current.ctl.arrange(moveCard(a, card, g.dataset.group === "new" ? "new" : Number(g.dataset.group), before), null);
  });
}

function handCard(t, id, decks, wr, gi) {
  const c = cardInfo(id, decks, wr);
  const sel = t.selected === id;
  const fresh = t.hand.fresh.has(id);
  return el(
    "button",
    {
      type: "button",
      class: cardClass(c, "hand-card") + (sel ? " selected" : "") + (fresh ? " fresh" : ""),
      draggable: "true",
      "data-card": id,
      "data-face": c.face,
      "data-group": gi,
      "aria-pressed": sel ? "true" : "false",
      title: c.name,
    },
    // what a screen reader says is the card's name; what the eye sees is hidden from it
    el("span", { class: "c-face", "aria-hidden": "true" }, cardFace(c, fresh ? el("span", { class: "c-new" }, "new") : null)),
    el("span", { class: "sr-only" }, c.name + (fresh ? ", just drawn" : "")),
  );
}

export function focusCard(id) {
  const b = document.querySelector('#hand button[data-card="' + id + '"]');
  if (b) b.focus({ preventScroll: false });
}

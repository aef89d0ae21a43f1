/* The player's cards, in their groups.  A card is selected with a tap, a click or
   Enter; the selected card moves to another group with that group's "Move here"
   (touch and mouse alike), to a group of its own with "New group", one place with
   the ◀ ▶ buttons or Shift+arrows, or by dragging with a mouse. */
import { $, el, fill } from "./dom.js";
import { cardClass, cardFace, cardInfo, wildRankOf } from "./cardview.js";
import { groupKind, moveCard } from "./arranging.js";
import { decksOf } from "./state.js";
import { handMessage } from "./render-table.js";

const KIND = { pure: "pure sequence", impure: "sequence", set: "set" };

/** ctl: {select(id), arrange(arr, focusCard)} from the page. */
export function renderHand(t, ctl) {
  const box = $("hand");
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
        ? el("button", { type: "button", class: "move-here", "data-group": gi, title: "Move the selected card to the end of this group", on: { click: () => ctl.arrange(moveCard(hand.arr, sel, gi, null), sel) } }, "Move here")
        : null;
    return el(
      "div",
      { class: "group" + (kind ? " ok " + kind : ""), role: "group", "data-group": gi, "aria-label": "group " + (gi + 1) + (label ? ", " + label : "") },
      el("div", { class: "group-cards" }, g.map((id) => handCard(t, id, decks, wr, gi, ctl))),
      el("div", { class: "group-foot" }, el("span", { class: "group-label" }, label), target),
    );
  });
  const zone = el("div", { class: "group new-group", "data-group": "new", "aria-hidden": "true" }, el("div", { class: "group-cards" }, "drop here for a new group"));
  fill(box, ...groups, zone);
  for (const g of box.querySelectorAll(".group")) {
    g.addEventListener("dragover", (e) => {
      e.preventDefault();
      g.classList.add("over");
    });
    g.addEventListener("dragleave", () => g.classList.remove("over"));
    g.addEventListener("drop", (e) => {
      e.preventDefault();
      g.classList.remove("over");
      const card = Number(e.dataTransfer.getData("text/plain"));
      if (!Number.isInteger(card) || !hand.arr.flat().includes(card)) return;
      const target = e.target.closest ? e.target.closest("[data-card]") : null;
      let before = target ? Number(target.dataset.card) : null;
      if (target && before !== card) {
        const r = target.getBoundingClientRect();
        if (e.clientX > r.left + r.width / 2) {
          const grp = hand.arr[Number(g.dataset.group)] || [];
          const k = grp.indexOf(before);
          before = k >= 0 && k + 1 < grp.length ? grp[k + 1] : null;
        }
      }
      if (before === card) return;
      ctl.arrange(moveCard(hand.arr, card, g.dataset.group === "new" ? "new" : Number(g.dataset.group), before), null);
    });
  }
}

function handCard(t, id, decks, wr, gi, ctl) {
  const c = cardInfo(id, decks, wr);
  const sel = t.selected === id;
  const fresh = t.hand.fresh.has(id);
  const b = el(
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
  b.addEventListener("click", () => ctl.select(id));
  b.addEventListener("dragstart", (e) => {
    e.dataTransfer.setData("text/plain", String(id));
    e.dataTransfer.effectAllowed = "move";
    b.classList.add("dragging");
  });
  b.addEventListener("dragend", () => b.classList.remove("dragging"));
  b.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
    e.preventDefault();
    const dir = e.key === "ArrowLeft" ? -1 : 1;
    if (e.shiftKey) {
      if (t.selected !== id) ctl.select(id);
      ctl.nudge(id, dir);
    } else {
      const all = t.hand.arr.flat();
      const k = all.indexOf(id) + dir;
      if (k >= 0 && k < all.length) focusCard(all[k]);
    }
  });
  return b;
}

export function focusCard(id) {
  const b = document.querySelector('#hand button[data-card="' + id + '"]');
  if (b) b.focus({ preventScroll: false });
}

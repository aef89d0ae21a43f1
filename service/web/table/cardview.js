/* Cards as the page shows them: faces, names for screen readers, and the orders a
   person lays them in. */
import { el } from "./dom.js";

const R = window.RummyPF;
const SUIT_NAME = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
const RANK_NAME = { A: "ace", T: "10", J: "jack", Q: "queen", K: "king" };

export const decksFor = (seats) => R.cards.decksFor(seats || 6);

export function cardInfo(id, decks, wildRank) {
  const d = R.cards.describe(id, decks);
  const face = R.cards.face(id, decks);
  const wild = R.cards.isWild(d, wildRank === undefined ? null : wildRank);
  if (d.joker) return { id, d, face, joker: true, rank: "JK", suit: "\u2605", red: false, wild: true, name: "printed joker" };
  const rank = face[0] === "T" ? "10" : face[0];
  return {
    id,
    d,
    face,
    joker: false,
    rank,
    suit: R.cards.SUIT_SYMBOLS[face[1]],
    red: face[1] === "H" || face[1] === "D",
    wild,
    name: (RANK_NAME[face[0]] || face[0]) + " of " + SUIT_NAME[face[1]] + (wild ? ", wild" : ""),
  };
}

/** "7♥", "10♠", "joker". */
export function short(id, decks) {
  const c = cardInfo(id, decks, null);
  return c.joker ? "joker" : c.rank + c.suit;
}

/** The wild rank the view's indicator makes (null: only printed jokers are wild). */
export function wildRankOf(view, decks) {
  return view ? R.cards.wildRankOf(R.cards.describe(view.wild_indicator, decks)) : null;
}

/* The rank, the suit and (a wild card) a star run down the card's left edge, the part
   that stays in sight when cards overlap. */
export function cardFace(c, extra) {
  return [
    el("span", { class: "c-rank" }, c.rank),
    el("span", { class: "c-suit" }, c.suit),
    c.wild && !c.joker ? el("span", { class: "c-wild", "aria-hidden": "true", title: "wild" }, "\u2605") : null,
    el("span", { class: "c-pip", "aria-hidden": "true" }, c.joker ? "\u2605" : c.suit),
    extra || null,
  ];
}

export function cardClass(c, size) {
  return "card " + (c.joker ? "joker" : c.red ? "red" : "black") + (c.wild ? " wild" : "") + (size ? " " + size : "");
}

/** A card to look at (not a control). */
export function cardView(id, decks, wildRank, size) {
  const c = cardInfo(id, decks, wildRank);
  return el("span", { class: cardClass(c, size), title: c.name, "data-card": id, "data-face": c.face, role: "img", "aria-label": c.name }, cardFace(c));
}

export function cardsView(ids, decks, wildRank, size) {
  return el("span", { class: "cards" }, ids.map((id) => cardView(id, decks, wildRank, size)));
}

/** Cards sorted for display: wild cards first, then by suit and rank. */
export function sortedIds(ids, decks, wildRank) {
  const key = (id) => {
    const d = R.cards.describe(id, decks);
    const wild = R.cards.isWild(d, wildRank);
    return (wild ? 0 : 1 + d.suit) * 100 + (d.joker ? 99 : d.rank === 0 ? 13 : d.rank);
  };
  return ids.slice().sort((a, b) => key(a) - key(b) || a - b);
}

/** A group's cards in the order a person lays them: a sequence by rank (ace low or
    high, whichever fits) with its wild cards in the gaps, a set by suit. */
export function orderGroup(ids, decks, wildRank) {
  const cards = ids.map((id) => ({ id, d: R.cards.describe(id, decks) }));
  const kind = ids.length >= 3 ? R.groups.classify(cards.map((c) => c.d), wildRank) : null;
  const wild = (c) => kind !== "pure" && R.cards.isWild(c.d, wildRank);
  const nat = cards.filter((c) => !wild(c));
  const wilds = cards.filter(wild).map((c) => c.id);
  if (kind === "set" || kind === null || !nat.length) {
    nat.sort((a, b) => a.d.suit - b.d.suit || a.d.rank - b.d.rank || a.id - b.id);
    return nat.map((c) => c.id).concat(wilds);
  }
  const pos = (c, high) => (c.d.rank === 0 ? (high ? 14 : 1) : c.d.rank + 1);
  const span = (high) => {
    const ps = nat.map((c) => pos(c, high));
    return Math.max(...ps) - Math.min(...ps) + 1;
  };
  const high = span(false) > ids.length;
  nat.sort((a, b) => pos(a, high) - pos(b, high) || a.id - b.id);
  const out = [];
  let p = pos(nat[0], high);
  for (const c of nat) {
    while (p < pos(c, high) && wilds.length) {
      out.push(wilds.shift());
      p++;
    }
    out.push(c.id);
    p = pos(c, high) + 1;
  }
  while (wilds.length && p <= 14) {
    out.push(wilds.shift());
    p++;
  }
  return wilds.concat(out);
}

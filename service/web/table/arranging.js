/* The player's arrangement of their cards into groups: pure functions from one
   arrangement (a list of groups, each a list of card ids) to the next. */
import { orderGroup, sortedIds } from "./cardview.js";

const R = window.RummyPF;

/** Groups by suit (wild cards first), for a fresh deal. */
export function bySuit(cards, decks, wildRank) {
  const groups = new Map();
  for (const id of sortedIds(cards, decks, wildRank)) {
    const d = R.cards.describe(id, decks);
    const k = R.cards.isWild(d, wildRank) ? -1 : d.suit;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(id);
  }
  return [...groups.values()];
}

/** The person's groups kept across updates: cards that left go, new cards join the
    last group.  Returns {arr, fresh} (fresh: the cards that were not placed). */
export function sync(arr, cards) {
  const have = new Set(cards);
  let out = arr.map((g) => g.filter((c) => have.has(c)));
  const placed = new Set(out.flat());
  out = out.filter((g) => g.length);
  const fresh = cards.filter((c) => !placed.has(c));
  if (fresh.length) {
    if (out.length) out[out.length - 1] = out[out.length - 1].concat(fresh);
    else out.push(fresh);
  }
  return { arr: out, fresh };
}

/** ``card`` moved to group ``toGroup`` (an index, or "new" for a group of its own),
    before ``beforeCard`` (null: at the end). */
export function moveCard(arr, card, toGroup, beforeCard) {
  const out = arr.map((g) => g.filter((c) => c !== card));
  if (toGroup === "new") out.push([card]);
  else {
    const g = out[toGroup];
    if (!g) return arr;
    const at = beforeCard === null || beforeCard === undefined ? -1 : g.indexOf(beforeCard);
    if (at < 0) g.push(card);
    else g.splice(at, 0, card);
  }
  return out.filter((g) => g.length);
}

/** One place left (dir −1) or right (+1), across group boundaries; null when it cannot move. */
export function nudge(arr, card, dir) {
  const out = arr.map((g) => g.slice());
  const gi = out.findIndex((g) => g.includes(card));
  if (gi < 0) return null;
  const g = out[gi];
  const i = g.indexOf(card);
  const j = i + dir;
  if (j >= 0 && j < g.length) {
    g[i] = g[j];
    g[j] = card;
  } else {
    const next = gi + dir;
    if (next < 0 || next >= out.length) return null;
    g.splice(i, 1);
    if (dir < 0) out[next].push(card);
    else out[next].unshift(card);
  }
  return out.filter((x) => x.length);
}

/** The Sort button: the best arrangement RummyPF.score finds, loose cards last. */
export function best(cards, decks, wildFace, wildRank) {
  const faces = cards.map((id) => R.cards.face(id, decks));
  const res = R.score(faces, wildFace);
  const pool = new Map();
  for (const id of cards) {
    const f = R.cards.face(id, decks);
    if (!pool.has(f)) pool.set(f, []);
    pool.get(f).push(id);
  }
  const take = (f) => pool.get(f).shift();
  const groups = res.groups.map((g) => orderGroup(g.map(take), decks, wildRank));
  const loose = sortedIds(res.loose.map(take), decks, wildRank);
  return groups.concat(loose.length ? [loose] : []);
}

/** What a group is: "pure", "impure", "set", or null (fewer than three cards, or not a group). */
export function groupKind(ids, decks, wildRank) {
  return ids.length >= 3 ? R.groups.classify(ids.map((id) => R.cards.describe(id, decks)), wildRank) : null;
}

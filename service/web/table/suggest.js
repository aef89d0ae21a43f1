/* The page's suggestion for the player's next move, as the reference bots would
   choose it, and the count of the cards in hand. */
import { short, wildRankOf } from "./cardview.js";

const R = window.RummyPF;

export function countOf(ids, decks, wildRank) {
  return R.arrange.count(ids.map((id) => R.cards.describe(id, decks)), wildRank);
}

/** The fewest points after one discard (ties: the costlier card, then the higher id). */
export function bestDiscard(cards, decks, wildRank) {
  let best = null;
  for (const c of [...new Set(cards)].sort((a, b) => b - a)) {
    const kept = cards.filter((x) => x !== c);
    const r = countOf(kept, decks, wildRank);
    if (r.valid_declare) return { card: c, points: 0, valid: true };
    const v = R.cards.value(R.cards.describe(c, decks), wildRank);
    if (best === null || r.points < best.points || (r.points === best.points && v > best.value)) best = { card: c, points: r.points, valid: false, value: v };
  }
  return best;
}

/** What a suggestion depends on: one made for another state is never shown. */
export function suggestionKey(hand) {
  const v = hand && hand.view;
  if (!v || !v.me) return "";
  return hand.hand_no + "|" + v.phase + "|" + v.turn + "|" + v.me.status + "|" + v.me.cards.join(",") + "|" + v.open.slice(-1).join(",");
}

/** {key, points, move, card, text} for the hand as it stands, or null when there is nothing to suggest. */
export function suggest(hand, decks) {
  if (!hand || !hand.view || !hand.view.me || hand.view.phase === "ended") return null;
  const v = hand.view;
  const me = v.me;
  const wr = wildRankOf(v, decks);
  const s = { key: suggestionKey(hand), points: null, move: null, card: null, text: "" };
  if (me.status !== "playing") return s;
  if (me.cards.length === 14) {
    const b = bestDiscard(me.cards, decks, wr);
    s.card = b.card;
    if (b.valid) {
      s.move = "declare";
      s.text = "You can declare: put " + short(b.card, decks) + " face down and show your hand.";
    } else {
      s.move = "discard";
      s.points = b.points;
      s.text = "Suggestion: discard " + short(b.card, decks) + " — your hand then counts " + b.points + " points.";
    }
    return s;
  }
  const now = countOf(me.cards, decks, wr);
  s.points = now.points;
  if (v.turn === me.seat && v.phase === "draw") {
    const top = v.open.length ? v.open[v.open.length - 1] : null;
    const withOpen = top === null ? null : bestDiscard(me.cards.concat([top]), decks, wr);
    if (withOpen && (withOpen.valid || withOpen.points < now.points)) {
      s.move = "draw_open";
      s.text = "Suggestion: take " + short(top, decks) + " from the open pile" + (withOpen.valid ? " — it completes your hand." : " — it lowers your count to " + withOpen.points + ".");
    } else {
      s.move = "draw_closed";
      s.text = "Suggestion: draw from the closed pile.";
    }
  }
  return s;
}

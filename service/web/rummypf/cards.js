/* rummy-pf browser verifier: card ids, faces and values (docs/fairness.md §3,
   Appendix B.1). */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});

  const SUITS = "SHDC";
  const RANKS = "A23456789TJQK";
  const SUIT_SYMBOLS = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };

  /** Decks of the pack for a table of this many seats (D1). */
  function decksFor(seats) {
    return seats === 8 ? 3 : 2;
  }

  function packSize(decks) {
    return decks * 53;
  }

  function isJoker(id, decks) {
    return id >= decks * 52;
  }

  /** A card as {id, joker, rank (0 = A … 12 = K), suit (0 = S … 3 = C)}. */
  function describe(id, decks) {
    if (!Number.isInteger(id) || id < 0 || id >= packSize(decks)) throw new Error("no such card: " + id);
    if (isJoker(id, decks)) return { id, joker: true, rank: -1, suit: -1 };
    return { id, joker: false, rank: id % 13, suit: Math.floor((id % 52) / 13) };
  }

  function face(id, decks) {
    const c = describe(id, decks);
    return c.joker ? "JK" : RANKS[c.rank] + SUITS[c.suit];
  }

  /** Parse a face ("7H", "TS", "10S", "JK") into {joker, rank, suit}; null if it is not one. */
  function parseFace(f) {
    if (typeof f !== "string") return null;
    const s = f.trim().toUpperCase();
    if (s === "JK") return { joker: true, rank: -1, suit: -1 };
    const m = /^(10|[A2-9TJQK])([SHDC])$/.exec(s);
    if (!m) return null;
    const r = m[1] === "10" ? "T" : m[1];
    return { joker: false, rank: RANKS.indexOf(r), suit: SUITS.indexOf(m[2]) };
  }

  /** The wild rank of a hand: the indicator's rank, or null for a printed joker (D5). */
  function wildRankOf(indicator) {
    return indicator.joker ? null : indicator.rank;
  }

  function isWild(card, wildRank) {
    return card.joker || (wildRank !== null && card.rank === wildRank);
  }

  /** A card's value (B.1): A, K, Q, J, 10 are 10; 2-9 their number; a wild card 0. */
  function value(card, wildRank) {
    if (isWild(card, wildRank)) return 0;
    if (card.rank === 0 || card.rank >= 9) return 10;
    return card.rank + 1;
  }

  RummyPF.cards = {
    SUITS,
    RANKS,
    SUIT_SYMBOLS,
    decksFor,
    packSize,
    isJoker,
    describe,
    face,
    parseFace,
    wildRankOf,
    isWild,
    value,
  };
})(typeof window !== "undefined" ? window : globalThis);

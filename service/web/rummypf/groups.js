/* rummy-pf browser verifier: what a group is (docs/fairness.md Appendix B.1,
   RULES.md D6-D10, D26, D28).  Cards are descriptors {joker, rank, suit}. */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});
  const { isWild } = RummyPF.cards;

  /** Positions of ranks with the ace low (1) and with the ace high (14). */
  function spans(ranks) {
    let loMin = 99;
    let loMax = -1;
    let hiMin = 99;
    let hiMax = -1;
    for (const r of ranks) {
      const lo = r + 1;
      const hi = r === 0 ? 14 : r + 1;
      loMin = Math.min(loMin, lo);
      loMax = Math.max(loMax, lo);
      hiMin = Math.min(hiMin, hi);
      hiMax = Math.max(hiMax, hi);
    }
    return [loMax - loMin + 1, hiMax - hiMin + 1];
  }

  function distinct(xs) {
    return new Set(xs).size === xs.length;
  }

  /** Pure sequence: no printed joker, one suit, distinct consecutive ranks, ace low or high. */
  function isPure(cards) {
    if (cards.length < 3) return false;
    for (const c of cards) if (c.joker) return false;
    const suit = cards[0].suit;
    for (const c of cards) if (c.suit !== suit) return false;
    const ranks = cards.map((c) => c.rank);
    if (!distinct(ranks)) return false;
    const [lo, hi] = spans(ranks);
    // distinct ranks whose span equals their number are consecutive
    return lo === cards.length || hi === cards.length;
  }

  /** Impure sequence: all wild (at most 13), or the naturals of one suit with distinct ranks
      fitting, ace low or high, in a window as long as the group (at most 13). */
  function isImpure(cards, wildRank) {
    if (cards.length < 3 || cards.length > 13) return false;
    const naturals = cards.filter((c) => !isWild(c, wildRank));
    if (naturals.length === 0) return true;
    const suit = naturals[0].suit;
    for (const c of naturals) if (c.suit !== suit) return false;
    const ranks = naturals.map((c) => c.rank);
    if (!distinct(ranks)) return false;
    const [lo, hi] = spans(ranks);
    return Math.min(lo, hi) <= cards.length;
  }

  /** Set: at most 4 cards, at least one natural, the naturals of one rank with distinct suits. */
  function isSet(cards, wildRank) {
    if (cards.length < 3 || cards.length > 4) return false;
    const naturals = cards.filter((c) => !isWild(c, wildRank));
    if (naturals.length === 0) return false;
    const rank = naturals[0].rank;
    for (const c of naturals) if (c.rank !== rank) return false;
    return distinct(naturals.map((c) => c.suit));
  }

  /** "pure", "impure", "set" or null (the strongest kind, D26). */
  function classify(cards, wildRank) {
    if (isPure(cards)) return "pure";
    if (isImpure(cards, wildRank)) return "impure";
    if (isSet(cards, wildRank)) return "set";
    return null;
  }

  function isSequence(kind) {
    return kind === "pure" || kind === "impure";
  }

  RummyPF.groups = { isPure, isImpure, isSet, classify, isSequence };
})(typeof window !== "undefined" ? window : globalThis);

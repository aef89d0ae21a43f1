/* rummy-pf browser verifier: rules id, commitments, the key K, the byte stream,
   uniform integers and the shuffles (docs/fairness.md §4-§8). */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});
  const { utf8, hexToBytes, bytesToHex, concat, u32, u64, LP } = RummyPF.bytes;
  const C = RummyPF.crypto;

  const TWO32 = 4294967296;

  /** rules_id = hex(SHA-256(canonical({"ruleset": "rummy13/v1", "table": R}))) (§4). */
  async function rulesId(rules) {
    return C.sha256Hex(RummyPF.canonicalBytes({ ruleset: "rummy13/v1", table: rules }));
  }

  /** commit_S = SHA-256(server_seed) (§5). */
  async function serverCommit(serverSeedHex) {
    return C.sha256Hex(hexToBytes(serverSeedHex));
  }

  /** c_i = SHA-256(LP("rummy-pf/v1/pcommit") ‖ u32(i) ‖ seed_i) (§5). */
  async function playerCommit(seat, seedHex) {
    return C.sha256Hex(concat(LP("rummy-pf/v1/pcommit"), u32(seat), hexToBytes(seedHex)));
  }

  /** T of §6; dealt is [{seat, player_id, seed (hex, "" for none)}] in ascending seat order. */
  function buildT(tableId, handNo, rulesIdHex, dealt) {
    const parts = [LP("rummy-pf/v1/deal"), LP(tableId), u64(handNo), LP(rulesIdHex), u32(dealt.length)];
    for (const d of dealt) parts.push(u32(d.seat), LP(d.player_id), LP(hexToBytes(d.seed)));
    return concat(...parts);
  }

  /** K = HMAC-SHA256(key = server_seed, msg = T) (§6). Returns bytes. */
  async function deriveK(serverSeedHex, T) {
    return C.hmacSha256(hexToBytes(serverSeedHex), T);
  }

  /** The byte stream of §7 for one label: block_j = HMAC-SHA256(K, LP(label) ‖ u64(j)). */
  class Stream {
    constructor(kKey, label) {
      this.kKey = kKey;
      this.label = label;
      this.j = 0;
      this.buf = new Uint8Array(0);
      this.off = 0;
    }
    static async create(kBytes, label) {
      return new Stream(await C.hmacKey(kBytes), label);
    }
    async block(j) {
      return C.hmacSign(this.kKey, concat(LP(this.label), u64(j)));
    }
    async nextU32() {
      if (this.off + 4 > this.buf.length) {
        const b = await this.block(this.j++);
        this.buf = concat(this.buf.subarray(this.off), b);
        this.off = 0;
      }
      const b = this.buf;
      const o = this.off;
      this.off += 4;
      return ((b[o] << 24) >>> 0) + (b[o + 1] << 16) + (b[o + 2] << 8) + b[o + 3];
    }
    /** uniform(n), 1 ≤ n ≤ 2^32: rejection sampling, no modulo bias. */
    async uniform(n) {
      if (!Number.isInteger(n) || n < 1 || n > TWO32) throw new Error("uniform: n out of range: " + n);
      const limit = TWO32 - (TWO32 % n);
      for (;;) {
        const u = await this.nextU32();
        if (u < limit) return u % n;
      }
    }
  }

  /** Fisher-Yates (Durstenfeld) from the top index down (§8); shuffles a copy. */
  async function shuffle(items, stream) {
    const a = items.slice();
    for (let i = a.length - 1; i >= 1; i--) {
      const j = await stream.uniform(i + 1);
      const t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
    return a;
  }

  /** The deck of §8: the pack in id order shuffled with label "deal". */
  async function deriveDeck(kBytes, packSize) {
    const pack = [];
    for (let i = 0; i < packSize; i++) pack.push(i);
    return shuffle(pack, await Stream.create(kBytes, "deal"));
  }

  /** Reshuffle number k (§8): the cards sorted by id, shuffled with "reshuffle/k". */
  async function reshuffle(kBytes, k, cards) {
    const sorted = cards.slice().sort((a, b) => a - b);
    return shuffle(sorted, await Stream.create(kBytes, "reshuffle/" + k));
  }

  /** The dealing order: from the next dealt seat after the dealer, ascending, wrapping. */
  function dealingOrder(dealtSeats, dealer) {
    const asc = dealtSeats.slice().sort((a, b) => a - b);
    if (asc.length === 0) return [];
    let start = asc.findIndex((s) => s > dealer);
    if (start < 0) start = 0;
    return asc.slice(start).concat(asc.slice(0, start));
  }

  /** Deal the deck (§8, D3, D4): 13 each round-robin, then indicator, open card, closed pile. */
  function dealDeck(deck, order) {
    const hands = new Map();
    for (const s of order) hands.set(s, []);
    let p = 0;
    for (let round = 0; round < 13; round++) for (const s of order) hands.get(s).push(deck[p++]);
    const indicator = deck[p++];
    const open = deck[p++];
    return { hands, indicator, open, closed: deck.slice(p) };
  }

  RummyPF.fairness = {
    rulesId,
    serverCommit,
    playerCommit,
    buildT,
    deriveK,
    Stream,
    shuffle,
    deriveDeck,
    reshuffle,
    dealingOrder,
    dealDeck,
    bytesToHex,
    utf8,
  };
})(typeof window !== "undefined" ? window : globalThis);

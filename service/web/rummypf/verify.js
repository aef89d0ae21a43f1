/* rummy-pf browser verifier: the checks of docs/fairness.md §14, in order, for
   rummy-pf/v2 and (when the user accepts it) rummy-pf/v1 (Appendix C).

   This file holds what the checks share, the signature and seed checks, the chain,
   and the verdict. The other checks register themselves from their own files,
   loaded after this one: verify-format.js (§13), verify-play.js (the deal, the
   replay, time, points, penalties, settlement) and verify-evidence.js (§15).
   RummyPF.score (counting a hand) needs none of them. */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});
  const B = RummyPF.bytes;
  const C = RummyPF.crypto;
  const U = RummyPF.util;
  const F = RummyPF.fairness;
  const cards = RummyPF.cards;
  const arrange = RummyPF.arrange;
  const { show, has, isPlainObject, jsonEqual } = U;

  const V1 = "rummy-pf/v1";
  const V2 = "rummy-pf/v2";
  const MAX_SAFE = 9007199254740991;
  const ZERO_HEAD = "00".repeat(32);
  const CHECKS_V2 = [
    "format",
    "signature",
    "player_signatures",
    "server_commit",
    "player_seeds",
    "deck",
    "deal",
    "replay",
    "time",
    "points",
    "penalties",
    "settlement",
    "chain",
    "evidence",
  ];
  // Appendix C: v1 has no player_signatures and no time; evidence, as in v2, is skipped when none is given
  const CHECKS_V1 = CHECKS_V2.filter((c) => !["player_signatures", "time"].includes(c));
  const ACTION_KINDS = ["draw_closed", "draw_open", "drop", "leave", "timeout", "discard", "declare"];

  class CheckFailure extends Error {
    constructor(check, message, record, expected, found) {
      super(message);
      this.check = check;
      this.record = record === undefined ? null : record;
      this.expected = expected === undefined ? null : expected;
      this.found = found === undefined ? null : found;
    }
  }

  class Skip {
    constructor(reason) {
      this.reason = reason;
    }
  }

  function isInt(x, lo, hi) {
    return typeof x === "number" && Number.isInteger(x) && x >= lo && x <= hi;
  }

  const ID_RE = /^[A-Za-z0-9_.:-]{1,64}$/;

  function isId(x) {
    return typeof x === "string" && ID_RE.test(x);
  }

  function isText(x) {
    if (typeof x !== "string") return false;
    const n = Array.from(x).length;
    return n >= 1 && n <= 500;
  }

  /** The server key fingerprint (§9): SHA-256 of the raw key, 64 lowercase hex digits in groups of four. */
  async function fingerprint(keyHex) {
    const h = await C.sha256Hex(B.hexToBytes(keyHex));
    return h.match(/.{4}/g).join(" ");
  }

  // ---------------------------------------------------------------- reading

  function readJSON(input) {
    const J = RummyPF.jsonStrict;
    if (typeof input === "string") return J.parse(input);
    if (input instanceof ArrayBuffer) return J.parseBytes(new Uint8Array(input));
    if (input instanceof Uint8Array) return J.parseBytes(input);
    throw new J.ReadError("input is neither text nor bytes");
  }

  /** §2: the transcript (a test-vector file is read as its "transcript"). */
  function readTranscript(input) {
    const J = RummyPF.jsonStrict;
    let doc = readJSON(input);
    if (!isPlainObject(doc)) throw new J.ReadError("the top level is not an object");
    if (has(doc, "_about") && has(doc, "transcript")) {
      doc = doc.transcript;
      if (!isPlainObject(doc)) throw new J.ReadError("the vector's transcript is not an object");
    }
    return doc;
  }

  /** §15: an evidence file, read strictly (§2); a test-vector file is read as its "evidence".
      Its shape (a JSON array of signed items) is judged by the evidence check, not here:
      §2's rules are the only ones that make input unreadable. */
  function readEvidence(input) {
    let doc = readJSON(input);
    if (isPlainObject(doc) && has(doc, "_about") && has(doc, "evidence")) doc = doc.evidence;
    return doc;
  }

  // ---------------------------------------------------------------- signatures (§9)

  function sigMessage(v2, purpose, obj) {
    return B.concat(B.LP((v2 ? "rummy-pf/v2/" : "rummy-pf/v1/") + purpose), RummyPF.canonicalBytes(obj));
  }

  /** Strict verification (§9) of a signature over obj: {ok, problem}. */
  async function verifySig(v2, keyHex, purpose, obj, sigHex) {
    return RummyPF.ed25519.verify(B.hexToBytes(keyHex), B.hexToBytes(sigHex), sigMessage(v2, purpose, obj));
  }

  async function checkSignature(ctx) {
    const T = ctx.t;
    const pub = ctx.header.public_key;
    if (ctx.key !== null && ctx.key !== pub) {
      const kp = RummyPF.ed25519.keyProblem(B.hexToBytes(ctx.key));
      const why = kp ? " (and the pinned key itself is refused: " + kp + ")" : "";
      throw new CheckFailure("signature", "the header's public key is not the pinned key" + why, 0, ctx.key, pub);
    }
    const sigs = [
      ["transcript", U.without(T, "signature"), T.signature, null, "the transcript signature"],
      ["header", ctx.header, T.log[0].sig, 0, "the header signature"],
    ];
    const r1 = ctx.rec("commitments");
    if (r1) sigs.push(["commitments", r1.commitments, r1.sig, 1, "the commitments signature"]);
    for (const [purpose, obj, sig, rec, what] of sigs) {
      const v = await verifySig(ctx.v2, pub, purpose, obj, sig);
      if (!v.ok) throw new CheckFailure("signature", what + ": " + v.problem, rec, "a valid signature by " + pub, sig);
    }
    return true;
  }

  function playerKey(ctx, seat) {
    const s = ctx.header.seats.find((x) => x.seat === seat);
    return s ? s.player_key : null;
  }

  /** The seat's move signature (§9) over {table_id, hand_no, prev, move}: {ok, problem}. */
  async function verifyMove(ctx, seat, prev, move, sigHex) {
    const key = playerKey(ctx, seat);
    if (key === null) return { ok: false, problem: "seat " + show(seat) + " is not a seat of the header" };
    const body = { table_id: ctx.t.table_id, hand_no: ctx.t.hand_no, prev, move };
    return verifySig(true, key, "move", body, sigHex);
  }

  async function checkPlayerSignatures(ctx) {
    const log = ctx.t.log;
    const r1 = ctx.rec("commitments");
    if (!r1) return new Skip("the log ends before the commitments");
    const fail = (what, rec, seat, v, sig) => {
      throw new CheckFailure("player_signatures", what + ": " + v.problem, rec, "a move signature by " + playerKey(ctx, seat), sig);
    };
    for (const c of r1.commitments.commits) {
      if (c.commit === null) continue;
      const v = await verifyMove(ctx, c.seat, log[0].h, { kind: "commit", seat: c.seat, commit: c.commit }, c.psig);
      if (!v.ok) fail("seat " + c.seat + "'s commit is not signed by its player key", 1, c.seat, v, c.psig);
    }
    const r2 = ctx.rec("reveals");
    if (r2) {
      for (const e of r2.reveals) {
        if (e.status !== "revealed") continue;
        const v = await verifyMove(ctx, e.seat, log[1].h, { kind: "reveal", seat: e.seat, seed: e.seed }, e.psig);
        if (!v.ok) fail("seat " + e.seat + "'s reveal is not signed by its player key", 2, e.seat, v, e.psig);
      }
    }
    for (let i = 4; i < log.length; i++) {
      const r = log[i];
      if (r.type !== "action") continue;
      const a = r.action;
      if (a.kind === "timeout") {
        if (r.psig !== null) throw new CheckFailure("player_signatures", "a timeout carries a player signature", i, null, show(r.psig));
        continue;
      }
      if (r.psig === null) {
        throw new CheckFailure("player_signatures", "a " + a.kind + " by seat " + a.seat + " carries no player signature", i, "a move signature", null);
      }
      // every action, leave included, is signed over the record it follows (§9)
      if (r.psig.prev !== log[i - 1].h) {
        throw new CheckFailure("player_signatures", "the " + a.kind + "'s prev is not the h of the record before it (§9)", i, log[i - 1].h, r.psig.prev);
      }
      const v = await verifyMove(ctx, a.seat, r.psig.prev, a, r.psig.sig);
      if (!v.ok) fail("the " + a.kind + " is not signed by seat " + a.seat + "'s player key", i, a.seat, v, r.psig.sig);
    }
    return true;
  }

  // ---------------------------------------------------------------- seeds and deck

  async function checkServerCommit(ctx) {
    const T = ctx.t;
    if (T.server_seed === "") return new Skip("the server seed was not revealed");
    const c = await F.serverCommit(T.server_seed);
    if (c !== ctx.header.commit_s) {
      throw new CheckFailure("server_commit", "SHA-256(server_seed) is not the header's commit_s", 0, ctx.header.commit_s, c);
    }
    return true;
  }

  async function checkPlayerSeeds(ctx) {
    const r1 = ctx.rec("commitments");
    const r2 = ctx.rec("reveals");
    if (!r2) return new Skip("the log ends before the reveals");
    for (let k = 0; k < r2.reveals.length; k++) {
      const e = r2.reveals[k];
      const c = r1.commitments.commits[k].commit;
      if (e.status === "revealed") {
        if (c === null) throw new CheckFailure("player_seeds", "seat " + e.seat + " revealed a seed but committed nothing", 2, "no_commit", "revealed");
        const got = await F.playerCommit(e.seat, e.seed);
        if (got !== c) throw new CheckFailure("player_seeds", "seat " + e.seat + "'s seed does not match its commitment", 2, c, got);
      } else if (e.status === "no_commit") {
        if (c !== null) throw new CheckFailure("player_seeds", "seat " + e.seat + " is no_commit but has a commitment", 2, null, c);
      } else if (c === null) {
        throw new CheckFailure("player_seeds", "seat " + e.seat + " is withheld but has no commitment", 2, "a commitment", null);
      }
    }
    return true;
  }

  function dealtAndForfeits(ctx) {
    const r2 = ctx.rec("reveals");
    const dealt = [];
    const forfeits = [];
    for (const e of r2.reveals) (e.status === "withheld" ? forfeits : dealt).push(e.seat);
    return { dealt, forfeits };
  }

  async function checkDeck(ctx) {
    const T = ctx.t;
    const r2 = ctx.rec("reveals");
    if (T.server_seed === "" || !r2) {
      if (T.deck.length !== 0) {
        throw new CheckFailure("deck", "a deck is published although it cannot be derived", null, [], show(T.deck, 120));
      }
      return new Skip(T.server_seed === "" ? "the server seed was not revealed" : "the log ends before the reveals");
    }
    const dealtSeeds = [];
    for (const e of r2.reveals) {
      if (e.status === "withheld") continue;
      const s = ctx.header.seats.find((x) => x.seat === e.seat);
      dealtSeeds.push({ seat: e.seat, player_id: s.player_id, seed: e.status === "revealed" ? e.seed : "" });
    }
    const Tb = F.buildT(T.table_id, T.hand_no, ctx.header.rules_id, dealtSeeds);
    const K = await F.deriveK(T.server_seed, Tb);
    const deck = await F.deriveDeck(K, ctx.pack);
    ctx.K = K;
    ctx.deck = deck;
    if (!jsonEqual(deck, T.deck)) {
      let k = 0;
      while (k < deck.length && deck[k] === T.deck[k]) k++;
      throw new CheckFailure("deck", "the published deck is not the deck derived from the seeds (first difference at position " + k + ")", null, show(deck, 200), show(T.deck, 200));
    }
    return true;
  }

  // ---------------------------------------------------------------- chain

  async function checkChain(ctx) {
    const T = ctx.t;
    if (T.hand_no === 1 && ctx.header.prev_head !== ZERO_HEAD) {
      throw new CheckFailure("chain", "hand 1 of a table chains from 64 zeros (§11), not from another head", 0, ZERO_HEAD, ctx.header.prev_head);
    }
    // §14 check 13 (RULES.md D3): nothing before a table's first hand moves the button, so
    // its lowest seat deals hand 1 — for rummy-pf/v2 only, not checked for rummy-pf/v1
    if (ctx.v2 && T.hand_no === 1) {
      const lowest = Math.min(...ctx.header.seats.map((s) => s.seat));
      if (ctx.header.dealer !== lowest) {
        throw new CheckFailure(
          "chain",
          "hand 1 of a table is dealt by the lowest seat of its header, seat " + lowest + ", not by seat " + ctx.header.dealer + ": nothing before a table's first hand moves the button (RULES.md D3)",
          0,
          lowest,
          ctx.header.dealer
        );
      }
    }
    let prev = B.hexToBytes(ctx.header.prev_head);
    let h = null;
    for (let i = 0; i < T.log.length; i++) {
      const r = T.log[i];
      const d = await C.sha256(B.concat(prev, RummyPF.canonicalBytes(U.without(r, "h"))));
      h = B.bytesToHex(d);
      if (h !== r.h) throw new CheckFailure("chain", "record " + i + "'s h is not SHA-256(h_prev ‖ canonical(record))", i, h, r.h);
      prev = d;
    }
    if (T.head !== h) throw new CheckFailure("chain", "the head is not the h of the last record", null, h, T.head);
    return true;
  }

  // ---------------------------------------------------------------- the verdict

  const RUN = {
    signature: checkSignature,
    player_signatures: checkPlayerSignatures,
    server_commit: checkServerCommit,
    player_seeds: checkPlayerSeeds,
    deck: checkDeck,
    chain: checkChain,
  };

  /** The other files add their checks here (format, deal, replay, …, evidence). */
  function register(name, fn) {
    RUN[name] = fn;
  }

  function warningsOf(ctx) {
    const out = [];
    if (!ctx.v2) {
      out.push({
        code: "v1_server_only",
        message: "a rummy-pf/v1 transcript, accepted because you asked: it carries no player signatures, so the server alone vouches for every commitment, seed and move in it",
      });
    }
    const r2 = ctx.rec("reveals");
    if (r2) {
      const { dealt } = dealtAndForfeits(ctx);
      const statuses = r2.reveals.filter((e) => dealt.includes(e.seat)).map((e) => e.status);
      if (statuses.length > 0 && statuses.every((s) => s === "no_commit")) {
        out.push({ code: "no_player_seed", message: "no dealt seat's seed counted (every dealt seat had no_commit): the server alone chose the deck" });
      }
      const withheld = r2.reveals.filter((e) => e.status === "withheld").map((e) => e.seat);
      if (withheld.length) {
        out.push({ code: "withheld", message: "seat" + (withheld.length > 1 ? "s " : " ") + withheld.join(", ") + " withheld " + (withheld.length > 1 ? "their reveals" : "its reveal") });
      }
    }
    if (ctx.isVoid) out.push({ code: "void", message: "the hand was voided: " + ctx.voidReason });
    if (ctx.isVoid && ctx.t.server_seed === "") {
      out.push({ code: "seed_not_revealed", message: "the server seed of this void hand was not revealed: nothing about its cards can be checked" });
    }
    // §15 rule 4: a player item naming another key for its seat than the header lists (set by the evidence check)
    if (ctx.keyClaims && ctx.keyClaims.length) {
      const said = ctx.keyClaims.map((c) => "evidence item " + c.item + " says seat " + c.seat + "'s key is " + c.player_key + ", the header lists " + (c.listed === null ? "no such seat" : c.listed));
      out.push({
        code: "key_claim",
        message: said.join("; ") + ": the player's word, not proof (anyone can sign a player item for any key and seat; the server signed nothing that says so)",
      });
    }
    return out;
  }

  async function summaryOf(ctx, out) {
    const T = ctx.t;
    const s = { protocol: T.protocol, table_id: T.table_id, hand_no: T.hand_no };
    if (ctx.header) {
      const hd = ctx.header;
      s.seats = hd.seats.map((x) => ({ seat: x.seat, player_id: x.player_id }));
      s.dealer = hd.dealer;
      s.rules = hd.rules;
      s.public_key = hd.public_key;
      s.void = ctx.isVoid;
      s.void_reason = ctx.voidReason;
      s.server_seed = T.server_seed;
      s.decks = ctx.decks;
      if (T.result) {
        s.winner = T.result.winner;
        s.reason = T.result.reason;
        s.points = T.result.points;
        s.settlement = T.result.settlement;
      }
    }
    let keyHex = ctx.key;
    if (keyHex === null && Array.isArray(T.log) && isPlainObject(T.log[0]) && isPlainObject(T.log[0].header)) {
      keyHex = T.log[0].header.public_key;
    }
    s.key_pinned = ctx.key !== null;
    s.key = B.isHex(keyHex, 32) ? keyHex : null;
    s.key_fingerprint = s.key ? await fingerprint(s.key) : null;
    if (ctx.hand) {
      const h = ctx.hand;
      s.wild_indicator = h.indicator;
      s.wild_rank = h.wildRank === null ? null : cards.RANKS[h.wildRank];
      if (h.endInfo) s.counted = h.endInfo.counted;
      if (h.result) s.expected_result = h.result;
    }
    if (ctx.evidenceCounts) s.evidence = ctx.evidenceCounts;
    out.summary = s;
  }

  function emptyResult() {
    return { ok: false, failure: null, checks: [], checks_passed: [], checks_skipped: [], skip_reasons: {}, warnings: [], summary: {}, replay: [] };
  }

  /** Verify a transcript. input: its JSON text (or bytes); opts: {key: 64 hex digits,
      evidence: JSON text or bytes, allowV1: accept a rummy-pf/v1 transcript (§14)}. */
  async function verifyTranscript(input, opts) {
    opts = opts || {};
    const out = emptyResult();
    let doc;
    let evidence = null;
    try {
      doc = readTranscript(input);
      if (opts.evidence !== undefined && opts.evidence !== null && opts.evidence !== "") evidence = readEvidence(opts.evidence);
    } catch (e) {
      if (!(e instanceof RummyPF.jsonStrict.ReadError)) throw e;
      out.failure = { check: "read", message: e.message, record: null, expected: null, found: null };
      return out;
    }
    let key = null;
    if (opts.key !== undefined && opts.key !== null && String(opts.key).trim() !== "") {
      key = String(opts.key).trim().toLowerCase();
      if (!B.isHex(key, 32)) {
        out.failure = { check: "read", message: "the pinned key is not 64 hex digits", record: null, expected: "64 hex digits", found: String(opts.key) };
        return out;
      }
    }
    const v2 = doc.protocol !== V1;
    const ctx = { t: doc, v2, allowV1: opts.allowV1 === true, key, evidence, steps: [], expected: {}, after: {}, hand: null, header: null, rec: () => null };
    const names = v2 ? CHECKS_V2 : CHECKS_V1;
    out.checks = names.slice();
    // the counts of the evidence are reported whatever the verdict (§14 check 14)
    if (evidence !== null && RummyPF.verifyEvidence) ctx.evidenceCounts = RummyPF.verifyEvidence.counts(doc, evidence);
    for (const name of names) {
      let res;
      try {
        if (!RUN[name]) throw new Error("the check " + name + " is not loaded");
        res = await RUN[name](ctx);
      } catch (e) {
        if (e instanceof CheckFailure) {
          out.failure = { check: e.check, message: e.message, record: e.record, expected: e.expected, found: e.found };
          if (e.item !== undefined) out.failure.item = e.item;
          break;
        }
        // a fault of the verifier itself, or input the checks before did not rule out
        out.failure = { check: name, message: "could not be checked: " + (e && e.message ? e.message : String(e)), record: null, expected: null, found: null };
        break;
      }
      if (res instanceof Skip) {
        out.checks_skipped.push(name);
        out.skip_reasons[name] = res.reason;
      } else out.checks_passed.push(name);
    }
    out.ok = out.failure === null;
    if (ctx.header) out.warnings = warningsOf(ctx);
    await summaryOf(ctx, out);
    out.replay = ctx.steps;
    return out;
  }

  /** score(faces, wildFace): the count of a hand given by faces ("7H", "TS", "JK"). */
  function score(faces, wildFace) {
    const ind = cards.parseFace(wildFace);
    if (!ind) throw new Error("not a card face: " + wildFace);
    const descs = faces.map((f) => {
      const d = cards.parseFace(f);
      if (!d) throw new Error("not a card face: " + f);
      return d;
    });
    const norm = (d) => (d.joker ? "JK" : cards.RANKS[d.rank] + cards.SUITS[d.suit]);
    const c = arrange.count(descs, cards.wildRankOf(ind));
    return {
      points: c.points,
      valid_declare: c.valid_declare,
      groups: c.groups.map((g) => g.map((k) => norm(descs[k]))),
      loose: c.loose.map((k) => norm(descs[k])),
    };
  }

  RummyPF.verify = {
    verifyTranscript,
    readTranscript,
    readEvidence,
    fingerprint,
    register,
    CHECKS_V1,
    CHECKS_V2,
    // shared with verify-format.js, verify-play.js and verify-evidence.js
    base: {
      V1,
      V2,
      MAX_SAFE,
      ACTION_KINDS,
      CheckFailure,
      Skip,
      isInt,
      isId,
      isText,
      verifySig,
      verifyMove,
      playerKey,
      dealtAndForfeits,
    },
  };
  RummyPF.verifyTranscript = verifyTranscript;
  RummyPF.score = score;
})(typeof window !== "undefined" ? window : globalThis);

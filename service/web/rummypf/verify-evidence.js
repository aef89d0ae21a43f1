/* rummy-pf browser verifier: check 14, `evidence` (docs/fairness.md §15): the
   items a player keeps (acks, heads, the header it accepted, its player key,
   receipts), judged against the transcript; D35 for refusals the rules do not
   justify (and D33: no void while the house owes a refused action's seat its turn; D15: no
   other seat's move taken before a refused leave within that turn); a
   header the server signed for another hand of the same table, held to this
   hand's rules (rule 3, RULES.md D38) and, for the hand just before or after, to the button
   moving one seat (rule 3, D3).  A player item is the player's word: it fails nothing, and a key the
   header does not list for its seat is the warning key_claim (§14), which verify.js
   reports from ctx.keyClaims.  Loaded after verify.js and verify-play.js; registers
   itself there. */
(function (root) {
  "use strict";
  const RummyPF = root.RummyPF;
  const B = RummyPF.bytes;
  const U = RummyPF.util;
  const F = RummyPF.fairness;
  const { show, has, isPlainObject, jsonEqual } = U;
  const { MAX_SAFE, ACTION_KINDS, CheckFailure, Skip, isInt, isId, verifySig, verifyMove, playerKey } = RummyPF.verify.base;

  const PURPOSES = ["ack", "head", "header", "player", "receipt"];
  const BODY_FIELDS = {
    ack: ["table_id", "hand_no", "seat", "move", "prev", "psig", "i", "h", "arrived", "outcome", "code"],
    head: ["table_id", "hand_no", "i", "h"],
    player: ["table_id", "hand_no", "seat", "player_key"],
    receipt: ["table_id", "hand_no", "seat", "kind", "value", "prev"],
  };
  const HAND_NO_MAX = 2147483647;

  // ---------------------------------------------------------------- the forms of §15

  /** null when m is the seat's move as in §9 (a commit, a reveal, or an action as §13 has it),
      else why not. A malformed move gets no ack (§15): an ack holding one is not of the form. */
  function moveProblem(m, seat) {
    if (!isPlainObject(m)) return "an ack's move is not an object";
    if (m.seat !== seat) return "an ack's move is the seat's own: its seat is " + show(m.seat) + ", the ack's " + show(seat);
    const keys = Object.keys(m).sort();
    if (m.kind === "commit" || m.kind === "reveal") {
      const f = m.kind === "commit" ? "commit" : "seed";
      if (!jsonEqual(keys, [f, "kind", "seat"].sort())) return "a " + m.kind + " move has exactly the fields kind, seat, " + f;
      return B.isHex(m[f], 32) ? null : "a " + m.kind + " move's " + f + " is not hex(32)";
    }
    if (!ACTION_KINDS.includes(m.kind)) return "an ack's move is a commit, a reveal or an action (§11), not " + show(m.kind);
    const want = m.kind === "discard" || m.kind === "declare" ? ["card", "kind", "seat"] : ["kind", "seat"];
    const extra = keys.filter((k) => !want.includes(k) && !(m.kind === "declare" && k === "hint"));
    if (extra.length || !want.every((k) => has(m, k))) return "a " + m.kind + " action has exactly the fields " + want.join(", ") + (m.kind === "declare" ? " (and hint)" : "");
    if (has(m, "card") && !isInt(m.card, -MAX_SAFE, MAX_SAFE)) return "an action's card is not an integer";
    if (has(m, "hint") && !(Array.isArray(m.hint) && m.hint.every((g) => Array.isArray(g) && g.every((x) => isInt(x, -MAX_SAFE, MAX_SAFE))))) {
      return "a declare's hint is not a list of lists of integers";
    }
    return null;
  }

  /** null when item is a signed object of one of the forms of §15, else why it is not. */
  function formProblem(item) {
    if (!isPlainObject(item)) return "not a signed object {purpose, body, sig}";
    const keys = Object.keys(item).sort();
    if (!jsonEqual(keys, ["body", "purpose", "sig"])) return "not exactly {purpose, body, sig}: its fields are " + show(keys);
    const p = item.purpose;
    if (!PURPOSES.includes(p)) return "its purpose is not one of " + PURPOSES.join(", ") + ": " + show(p);
    if (!B.isHex(item.sig, 64)) return "its sig is not hex(64)";
    const b = item.body;
    if (!isPlainObject(b)) return "its body is not an object";
    if (p === "header") {
      // the header's own fields are judged by rule 3 (equal to the transcript's header; for another
      // hand of the same table, signed by the header's key, its rules and rules_id, and its dealer
      // for the hand just before or after: checkOtherHeader)
      if (!isId(b.table_id) || !isInt(b.hand_no, 1, HAND_NO_MAX)) return "a header body without a table_id and a hand_no";
      return null;
    }
    const want = BODY_FIELDS[p].slice().sort();
    const got = Object.keys(b).sort();
    if (!jsonEqual(got, want)) return "a " + p + " body has exactly the fields " + BODY_FIELDS[p].join(", ") + "; this one has " + got.join(", ");
    if (!isId(b.table_id)) return "table_id is not an id";
    if (!isInt(b.hand_no, 1, HAND_NO_MAX)) return "hand_no is not an integer from 1 to 2^31 - 1";
    if (has(b, "seat") && !isInt(b.seat, 0, 7)) return "seat is not an integer from 0 to 7";
    for (const f of ["i", "arrived"]) if (has(b, f) && !isInt(b[f], 0, MAX_SAFE)) return f + " is not an integer from 0 to 2^53 - 1";
    for (const f of ["prev", "h", "value", "player_key"]) if (has(b, f) && !B.isHex(b[f], 32)) return f + " is not hex(32)";
    if (has(b, "psig") && !B.isHex(b.psig, 64)) return "psig is not hex(64)";
    if (p === "receipt" && !["commit", "reveal"].includes(b.kind)) return "a receipt's kind is commit or reveal, not " + show(b.kind);
    if (p === "ack") {
      const mp = moveProblem(b.move, b.seat);
      if (mp) return mp;
      if (b.outcome === "accepted") {
        if (b.code !== null) return "an accepted ack's code is null, not " + show(b.code);
      } else if (b.outcome === "refused") {
        if (!isId(b.code)) return "a refused ack's code is an id, not " + show(b.code);
      } else return "an ack's outcome is accepted or refused, not " + show(b.outcome);
    }
    return null;
  }

  // ---------------------------------------------------------------- classes and counts

  /** What the log is, as far as it can be read (counts are reported even when format fails). */
  function logShape(T) {
    const log = Array.isArray(T.log) ? T.log : [];
    const type = (i) => (isPlainObject(log[i]) ? log[i].type : undefined);
    const last = log.length - 1;
    const isVoid = last >= 0 && type(last) === "void";
    return { isVoid, voidIndex: isVoid ? last : null, hasCommitments: type(1) === "commitments", hasReveals: type(2) === "reveals" };
  }

  /** rule 8's first item it does not count after_void but fails: a head or an ack of a record
      past the void's (a larger i: the house cut off records it had made), as
      {msg, record, expected, found}, or null. The void record's own head, and an ack whose i is
      the void record's, are checked as any (rules 5 and 7, linkProblem). */
  function pastTheVoid(shape, item) {
    if (!shape.isVoid) return null;
    const b = item.body;
    if ((item.purpose === "head" || item.purpose === "ack") && b.i > shape.voidIndex) {
      return {
        msg: "the server signed that the log had reached record " + b.i + ", but the transcript voids the hand at record " + shape.voidIndex + ": it cut off records it had made (a void follows every record, D33)",
        record: shape.voidIndex,
        expected: "i ≤ " + shape.voidIndex + " (the void record or one before it)",
        found: b.i,
      };
    }
    return null;
  }

  /** rule 5, and rule 7's first check: a head's or an ack's record i exists and its h is the
      body's h (and, for an ack, arrived ≥ record i's t); why not, as cutByVoid gives it, or null.
      Checked before anything in rule 8 but the records past the void's (pastTheVoid, where no
      record i exists): an ack for the void record's own i that names another h fails here, not
      after_void — the house showed the seat a record and published a void in its place
      (clarified 2026-12-07: an accepted reveal's ack names record 1, so a void that replaces
      record 1 fails it). */
  function linkProblem(T, item) {
    if (item.purpose !== "head" && item.purpose !== "ack") return null;
    const log = Array.isArray(T.log) ? T.log : [];
    const b = item.body;
    const r = isPlainObject(log[b.i]) ? log[b.i] : null;
    if (item.purpose === "head") {
      if (!r || r.h !== b.h) return { msg: "the signed head of record " + b.i + " is not that record's h", record: r ? b.i : null, expected: r ? r.h : "(no such record)", found: b.h };
      return null;
    }
    if (!r) return { msg: "record " + b.i + " does not exist", record: b.i, expected: "a record of the log", found: "none" };
    if (r.h !== b.h) return { msg: "the signed h of record " + b.i + " is not that record's h", record: b.i, expected: r.h, found: b.h };
    if (b.arrived < r.t) return { msg: "the move arrived before record " + b.i + " was made", record: b.i, expected: "arrived ≥ " + r.t, found: b.arrived };
    return null;
  }

  /** The seats record 0's header lists, as far as the log can be read (the counts are reported
      whatever the verdict). */
  function headerSeats(T) {
    const r0 = Array.isArray(T.log) && isPlainObject(T.log[0]) ? T.log[0] : null;
    const hd = r0 && isPlainObject(r0.header) ? r0.header : null;
    return hd && Array.isArray(hd.seats) ? hd.seats.filter(isPlainObject).map((s) => s.seat) : [];
  }

  /** The h of record j of the log, or null when it has none. */
  function hOf(T, j) {
    const log = Array.isArray(T.log) ? T.log : [];
    return isPlainObject(log[j]) ? log[j].h : null;
  }

  /** rules 6 and 7, what a receipt or an accepted commit's (reveal's) ack says of records 0 and 1
      beyond linkProblem: its seat is one the header lists (record 0), an accepted commit is judged
      at record 0 and an accepted reveal at record 1, and the move (the receipt) is signed over
      record 0's h (a commit) or record 1's h (a reveal). Why not, as linkProblem gives it, or null.
      None of it needs a record after 1, so rule 8 checks it before it sets the item aside
      (clarified 2026-12-07: a commit's ack or receipt signed over another record 0 fails
      evidence, though the void came before record 1). Refusals quote their move in checkAck:
      owedAfterVoid keeps one that misquotes it from after_void. */
  function heldRecordProblem(T, item) {
    const b = item.body;
    const accepted = item.purpose === "ack" && b.outcome === "accepted" && (b.move.kind === "commit" || b.move.kind === "reveal");
    if (item.purpose !== "receipt" && !accepted) return null;
    const kind = item.purpose === "receipt" ? b.kind : b.move.kind;
    const what = item.purpose === "receipt" ? "the " + kind + " receipt" : "the " + kind;
    const seats = headerSeats(T);
    if (!seats.includes(b.seat)) {
      return { msg: what + " is for seat " + b.seat + ", which the header does not list", record: 0, expected: "a seat of " + show(seats), found: b.seat };
    }
    const at = kind === "commit" ? 0 : 1;
    if (accepted && b.i !== at) return { msg: "an accepted " + kind + " is judged at record " + at, record: b.i, expected: at, found: b.i };
    const h = hOf(T, at);
    if (b.prev !== h) {
      return { msg: kind === "commit" ? what + "'s prev is not the header's h" : what + "'s prev is not the commitments' h", record: at, expected: h, found: b.prev };
    }
    return null;
  }

  /** rule 8's second item it does not count after_void but fails: an accepted reveal's ack when
      the log ends in a void before record 2 and the server seed is "" (the house held the seed),
      as pastTheVoid gives it, or null. The ack of a reveal refused for a reason the rules do not
      justify, under the same void, fails the same way, but only rule 7 can tell it (checkAck,
      through seedHiddenByVoid). */
  function seedHeldByVoid(shape, T, item) {
    if (!shape.isVoid) return null;
    const b = item.body;
    if (item.purpose === "ack" && b.outcome === "accepted" && b.move.kind === "reveal" && !shape.hasReveals && T.server_seed === "") {
      return {
        msg: "the server accepted seat " + b.seat + "'s seed, then voided the hand before the reveals were recorded and did not reveal its own seed: holding the seat's seed and its own, the house could know the deck, and a void that hides its seed could have been chosen for that deck (D33)",
        record: shape.voidIndex,
        expected: "the server seed revealed",
        found: show(T.server_seed),
      };
    }
    return null;
  }

  /** rule 8, the two items it does not count after_void but fails (pastTheVoid, seedHeldByVoid):
      why this one fails, or null. */
  function cutByVoid(shape, T, item) {
    return pastTheVoid(shape, item) || seedHeldByVoid(shape, T, item);
  }

  /** rule 8's second item for the ack of a reveal the house refused though the rules allowed it
      (rule 7: its seed matched the seat's commitment, signed over record 1's h): the house held
      the seat's seed as surely as if it had accepted it (amended 2026-12: before, such an ack was
      counted after_void). The failure, as cutByVoid gives one, or null. */
  function seedHiddenByVoid(shape, T, b) {
    if (!shape.isVoid || b.move.kind !== "reveal" || shape.hasReveals || T.server_seed !== "") return null;
    return {
      msg: "the server refused seat " + b.seat + "'s seed (" + b.code + ") though the rules allowed it (its seed matched the seat's commitment), then voided the hand before the reveals were recorded and did not reveal its own seed: holding the seat's seed and its own, the house could know the deck, and a void that hides its seed could have been chosen for that deck (D33; refusing a reveal holds the seed as well as accepting it)",
      record: shape.voidIndex,
      expected: "the server seed revealed",
      found: show(T.server_seed),
    };
  }

  /** The kind (commit or reveal) of the record 1 or 2 an item is for, when the log ends in a
      void before that record: a receipt, or an ack of a commit or a reveal; else null. */
  function voidedBeforeIts(shape, item) {
    if (!shape.isVoid || (item.purpose !== "receipt" && item.purpose !== "ack")) return null;
    const kind = item.purpose === "receipt" ? item.body.kind : item.body.move.kind;
    if (kind === "commit" && !shape.hasCommitments) return kind;
    return kind === "reveal" && !shape.hasReveals ? kind : null;
  }

  /** rule 8, as far as the log can be read before the checks have run (the counts are
      reported whatever the verdict): a refusal of a commit (a reveal) the void came before
      owed the seat its window unless it was stale or not legal at record i (rule 7). The
      move signature and the seed's commitment are taken as they read here; the evidence
      check judges them (owedAfterVoid). */
  function owedAsRead(T, b) {
    const log = T.log;
    const r = log[b.i];
    if (!isPlainObject(r) || r.h !== b.prev) return false;
    if (b.move.kind === "commit") return b.i === 0;
    // a reveal's refusal the rules do not justify, behind a void that hides the server seed,
    // fails (rule 8, seedHiddenByVoid); one they justify is checked as any: neither is after_void
    if (T.server_seed === "") return false;
    if (b.i !== 1 || r.type !== "commitments" || !isPlainObject(r.commitments) || !Array.isArray(r.commitments.commits)) return false;
    const e = r.commitments.commits.find((x) => isPlainObject(x) && x.seat === b.seat);
    return !!e && e.commit !== null;
  }

  /** rule 8: an item for a record the log never reached because the hand was voided first
      (a commit's receipt, accepted ack, or ack of a refusal that owed the seat its window,
      when the log ends in a void before record 1; a reveal's before record 2), unless what it
      says of the records the log has fails it, as for any item (rules 5–7: linkProblem, record
      i exists with the ack's h — a void that took record i's place does not; heldRecordProblem,
      a receipt's or an accepted ack's seat, i and prev; for a refusal, checkAck's quoting of
      the move, which leaves one that misquotes it out of owed) or rule 8 does (cutByVoid; for
      a refused reveal's ack, seedHiddenByVoid in checkAck, which leaves it out of owed): such
      an item is applied, and fails in its place. A refusal the rules justify is checked as any
      (rule 7). owed: the indices of the refusals the evidence check judged to owe the seat its
      window (rule 7 up to D35, whose check needs the record the void came before); without
      it, as read. */
  function afterVoid(shape, T, item, k, owed) {
    if (voidedBeforeIts(shape, item) === null || linkProblem(T, item) !== null || heldRecordProblem(T, item) !== null) return false;
    if (cutByVoid(shape, T, item) !== null) return false;
    const b = item.body;
    if (item.purpose === "receipt" || b.outcome === "accepted") return true;
    return owed ? owed.has(k) : owedAsRead(T, b);
  }

  /** "malformed" | "other_hand" | "after_void" | "applied" for each item of an evidence list. */
  function classify(T, items, owed) {
    const shape = logShape(T);
    return items.map((item, k) => {
      if (formProblem(item) !== null) return "malformed";
      const b = item.body;
      if (b.table_id !== T.table_id || b.hand_no !== T.hand_no) return "other_hand";
      return afterVoid(shape, T, item, k, owed) ? "after_void" : "applied";
    });
  }

  /** The counts of §15: items in the file, applied for this hand, for other hands, after a void. */
  function counts(T, evidence, owed) {
    if (!Array.isArray(evidence)) return { is_list: false, total: 0, applied: 0, other_hands: 0, after_void: 0, malformed: 0 };
    const classes = classify(T, evidence, owed);
    const n = (c) => classes.filter((x) => x === c).length;
    return { is_list: true, total: evidence.length, applied: n("applied"), other_hands: n("other_hand"), after_void: n("after_void"), malformed: n("malformed") };
  }

  function countText(c) {
    return c.applied + " of " + c.total + " items applied (" + c.other_hands + " for other hands, " + c.after_void + " after a void)";
  }

  // ---------------------------------------------------------------- the rules

  /** The seat's entry in record 1 (commitments) or record 2 (reveals), or null. */
  function entryOf(record, seat) {
    if (!record) return null;
    const list = record.type === "commitments" ? record.commitments.commits : record.reveals;
    return list.find((e) => e.seat === seat) || null;
  }

  /** A.3 legality of an action (of the form moveProblem accepts) in the state after a record
      (a snapshot of the replay). */
  function illegalBecause(snap, a) {
    if (!snap) return "the hand had no state there (it had ended)";
    if (snap.phase === "ended") return "the hand had ended";
    const st = snap.seats[a.seat];
    if (!isInt(a.seat, 0, 7) || !st) return "seat " + show(a.seat) + " is not a seat of the hand";
    if (st.status !== "playing") return "seat " + a.seat + " was not playing (" + st.status + ")";
    if (a.kind === "leave") return null;
    if (snap.turn !== a.seat) return "seat " + a.seat + " was not on turn";
    if (a.kind === "timeout") return null; // A.3: always legal for the seat on turn
    if (a.kind === "draw_closed" || a.kind === "drop") return snap.phase === "draw" ? null : "not in the draw phase";
    if (a.kind === "draw_open") {
      if (snap.phase !== "draw") return "not in the draw phase";
      return snap.open.length > 0 ? null : "the open pile was empty";
    }
    if (snap.phase !== "discard") return "not in the discard phase";
    if (!st.cards.includes(a.card)) return "card " + show(a.card) + " was not in the seat's hand";
    if (a.kind === "declare" && has(a, "hint")) {
      const kept = st.cards.slice();
      kept.splice(kept.indexOf(a.card), 1);
      if (!RummyPF.verify.sameMultiset([].concat(...a.hint), kept)) return "the hint is not the seat's cards without the finish card";
    }
    return null;
  }

  /** §15 rule 7: why a refusal was justified (the move could not be taken at record i), or null.
      The ack already quotes a move a table judges (checkAck): prev is the h of record i or of
      an earlier record, and psig the seat's move signature over it. */
  async function justified(ctx, b) {
    const log = ctx.t.log;
    const m = b.move;
    if (b.prev !== log[b.i].h) return "prev is not record " + b.i + "'s h (a stale move, signed over an earlier record)";
    if (m.kind === "commit") {
      if (b.i !== 0) return "a commit after the commitments were recorded";
      const e = entryOf(ctx.rec("commitments"), b.seat);
      return e && e.commit !== null ? "the seat's commitment was already in" : null;
    }
    if (m.kind === "timeout") return "a timeout is the server's own move (§9), never a player's";
    if (m.kind === "reveal") {
      if (b.i !== 1) return "a reveal when record " + b.i + " is not the commitments";
      const e = entryOf(ctx.rec("commitments"), b.seat);
      if (!e || e.commit === null) return "the seat committed nothing";
      if ((await F.playerCommit(b.seat, m.seed)) !== e.commit) return "the seed does not match the seat's commitment";
      return null;
    }
    if (b.i < 3) return "an action before the deal";
    return illegalBecause(ctx.after[b.i], m);
  }

  /** §15 rule 7, for a leave the house refused though the rules allowed it (b, its ack): i + 1,
      when record i + 1 is dated before want (arrived + the whole turn) and is an action that is not
      the seat's own move (another seat's action, or a timeout); else null (no record i + 1, one
      dated at or after want, the seat's move, or a record that is no action: a void there is judged
      by the void clause, checkAck). Record i + 1 whatever its own t: i was the last record of the
      log when the leave was judged, so one after it dated before arrived is no excuse (audit h80;
      until 2026-12-07 such a record was set aside). */
  function notTheLeaversMove(log, b, want) {
    const j = b.i + 1;
    if (j >= log.length) return null;
    const rj = log[j];
    if (rj.t >= want || rj.type !== "action") return null;
    return rj.action.seat === b.seat && rj.action.kind !== "timeout" ? null : j;
  }

  // ---------------------------------------------------------------- checking one item

  /** rule 7 for one ack, after its first check (record i exists, its h, arrived ≥ its t:
      linkProblem, in checkItem); true when it is a refusal the rules do not justify (it owed the
      seat its window, D35), else false. */
  async function checkAck(ctx, b, fail) {
    const log = ctx.t.log;
    const hd = ctx.header;
    const r = log[b.i];
    const m = b.move;
    // an accepted move's record dated before the move arrived: the windows and turns that run from it are shortened
    const backdated = (what, rec, t) =>
      fail("the server accepted seat " + b.seat + "'s " + m.kind + " when it arrived at " + b.arrived + ", but dated the " + what + " record that holds it (record " + rec + ") earlier: a record cannot be made before a move it holds arrived", rec, "t ≥ " + b.arrived, t);
    if (b.outcome === "accepted") {
      // its seat, i and prev (records 0 and 1) were checked first (heldRecordProblem, in checkItem)
      if (m.kind === "commit") {
        const e = entryOf(ctx.rec("commitments"), b.seat);
        if (!e || e.commit !== m.commit || e.psig !== b.psig) {
          fail("the server accepted seat " + b.seat + "'s commitment, but record 1 does not list it", 1, show({ commit: m.commit, psig: b.psig }), show(e));
        }
        // a record cannot be made before a move it holds arrived: a record 1 dated earlier moves back the reveal window
        const r1 = ctx.rec("commitments");
        if (r1.t < b.arrived) backdated("commitments", 1, r1.t);
      } else if (m.kind === "reveal") {
        const e = entryOf(ctx.rec("reveals"), b.seat);
        if (!e || e.status !== "revealed" || e.seed !== m.seed || e.psig !== b.psig) {
          fail("the server accepted seat " + b.seat + "'s seed, but record 2 does not show it revealed", 2, show({ seed: m.seed, status: "revealed", psig: b.psig }), show(e));
        }
        // ... and a record 2 dated earlier moves back the deal, from which the first turn runs
        const r2 = ctx.rec("reveals");
        if (r2.t < b.arrived) backdated("reveals", 2, r2.t);
      } else {
        if (r.type !== "action" || !jsonEqual(r.action, m)) {
          fail("the server accepted this move as record " + b.i + ", but the log holds another record there", b.i, show(m), show(r.type === "action" ? r.action : r.type));
        }
        if (!jsonEqual(r.psig, { prev: b.prev, sig: b.psig })) fail("record " + b.i + "'s psig is not the one acknowledged", b.i, show({ prev: b.prev, sig: b.psig }), show(r.psig));
        if (b.i < 1 || b.prev !== log[b.i - 1].h) fail("the move's prev is not the h of the record before it", b.i, b.i >= 1 ? log[b.i - 1].h : null, b.prev);
        // with arrived ≥ t above: t = arrived, the record was made when the table judged the move
        if (r.t < b.arrived) backdated("action", b.i, r.t);
      }
      return false;
    }
    // refused: first, the ack quotes a move a table judges: one signed over record i or an earlier
    // record, by the seat's key. i is the last record of the log when the move was judged, so the
    // move cannot be signed over a record after i (one that did not exist yet): such an ack names a false i
    for (let j = b.i + 1; j < log.length; j++) {
      if (log[j].h === b.prev) {
        fail("the server refused seat " + b.seat + "'s " + m.kind + " (" + b.code + ") with an ack naming record " + b.i + " as the last of the log, but the move is signed over record " + j + ", a later one: a move cannot be signed over a record that did not exist yet (the house passing its own refusal off as a stale move's)",
          b.i, "prev not the h of any record after " + b.i, "record " + j + "'s h " + b.prev);
      }
    }
    // ... and a prev that is no record's h, or a psig that does not verify over it, misquotes the move
    // (a table judges only a move its player signed over a record that exists): it would pass the
    // house's refusal off as justified. Either fails at record i, the record the ack says the move
    // was judged at (not the record its prev names)
    let quoted = false;
    for (let j = 0; j <= b.i; j++) if (log[j].h === b.prev) quoted = true;
    if (!quoted) {
      fail("the server refused seat " + b.seat + "'s " + m.kind + " (" + b.code + ") with an ack quoting a move signed over no record of the log up to record " + b.i + ": a table judges only a move signed over a record that exists, so the ack misquotes the move",
        b.i, "prev the h of record " + b.i + " or of an earlier record", b.prev);
    }
    const v = await verifyMove(ctx, b.seat, b.prev, m, b.psig);
    if (!v.ok) {
      fail("the server refused seat " + b.seat + "'s " + m.kind + " (" + b.code + ") with an ack whose psig is not the seat's move signature over its prev (" + v.problem + "): a table judges only a move its player signed, so the ack misquotes the move",
        b.i, "a move signature by " + playerKey(ctx, b.seat), b.psig);
    }
    if ((await justified(ctx, b)) !== null) return false;
    // rule 8: a reveal refused for the house's reason, behind a void before record 2 that hides the
    // server seed: the house held the seat's seed (as for an accepted reveal, cutByVoid)
    const hidden = seedHiddenByVoid(logShape(ctx.t), ctx.t, b);
    if (hidden) fail(hidden.msg, hidden.record, hidden.expected, hidden.found);
    // a refusal the rules do not justify was the house's: the seat keeps its whole window from arrived (D35)
    const owed = (what, rec, want, got) =>
      fail("the server refused seat " + b.seat + "'s " + m.kind + " (" + b.code + ") though the rules allowed it, then " + what + " before the seat's whole window from the refusal had passed (D35)", rec, "t ≥ " + want, got);
    if (m.kind === "commit") {
      const r1 = ctx.rec("commitments");
      const e = entryOf(r1, b.seat);
      if (e && e.commit === null && r1.t < b.arrived + hd.commit_ms) owed("closed the commit window", 1, b.arrived + hd.commit_ms, r1.t);
    } else if (m.kind === "reveal") {
      const r2 = ctx.rec("reveals");
      const e = entryOf(r2, b.seat);
      if (e && e.status === "withheld" && r2.t < b.arrived + hd.reveal_ms) owed("recorded it withheld", 2, b.arrived + hd.reveal_ms, r2.t);
    } else {
      const want = b.arrived + 1000 * ctx.rules.turn_seconds;
      // for a leave, also: record i + 1 (whatever its own t), if it is dated before
      // the owed turn has passed, is an action of that seat other than a timeout (a leave counts where
      // it was signed, at any time, D15: a house that refused it busy and took another seat's declare
      // first counted the leaver's cards instead of its 40). A void there is the void clause's, below.
      // Reported in record order with the timeouts of the turn running at i
      const takenFirst = m.kind === "leave" ? notTheLeaversMove(log, b, want) : null;
      const tookFirst = (j) => {
        const a = log[j].action;
        fail("the server refused seat " + b.seat + "'s leave (" + b.code + ") though the rules allowed it, then recorded " + (a.kind === "timeout" ? (a.seat === b.seat ? "its own clock's timeout" : "the clock's timeout for seat " + a.seat) : "seat " + a.seat + "'s " + a.kind) + " (record " + j + ") before the seat's whole turn from the refusal had passed, instead of the seat's move: a leave counts where it was signed, so the house chose when it took effect (D15, D35)",
          j, "a move of seat " + b.seat, a.kind + " of seat " + a.seat);
      };
      for (let j = b.i + 1; j < log.length; j++) {
        const rj = log[j];
        if (rj.type === "action" && rj.action.kind === "timeout" && rj.action.seat === b.seat && rj.t < want) owed("moved its clock", j, want, rj.t);
        if (j === takenFirst) tookFirst(j);
        if ((rj.type === "action" || rj.type === "deal") && rj.events.some((e) => e.kind === "turn")) break;
      }
      if (takenFirst !== null) tookFirst(takenFirst);
      // ... and so has a void that ends the log after record i, wherever it lies (not only in that turn):
      // the house may not void the hand while it owes the seat its move (RULES.md D33: a winning declare
      // refused busy and the hand voided at the next record took a won hand from its winner)
      const shape = logShape(ctx.t);
      if (shape.isVoid && shape.voidIndex > b.i && log[shape.voidIndex].t < want) owed("voided the hand", shape.voidIndex, want, log[shape.voidIndex].t);
    }
    return true;
  }

  /** Check one item of this hand; true when it is an ack of a refusal that owed the seat its window. */
  async function checkItem(ctx, k, item) {
    const b = item.body;
    const p = item.purpose;
    const fail = (msg, record, expected, found) => {
      const f = new CheckFailure("evidence", "evidence item " + k + " (" + p + "): " + msg, record === undefined ? null : record, expected === undefined ? null : expected, found === undefined ? null : found);
      f.item = k;
      throw f;
    };
    // rule 2: the signature, strictly
    const key = p === "player" ? b.player_key : ctx.header.public_key;
    const v = await verifySig(true, key, p, b, item.sig);
    if (!v.ok) fail("not signed by " + (p === "player" ? "the key it names" : "the header's public key") + ": " + v.problem, null, "a valid " + p + " signature by " + key, item.sig);
    const shape = logShape(ctx.t);
    const failWith = (why) => fail(why.msg, why.record, why.expected, why.found);
    // rule 8: a head or an ack of a record past the void's, which the void cut off
    const past = pastTheVoid(shape, item);
    if (past) failWith(past);
    // rules 5 and 7, first: record i exists and its h is the item's (an ack's arrived ≥ its t), before
    // anything else in rule 8 — an ack for the void record's own i with another h fails here
    const link = linkProblem(ctx.t, item);
    if (link) failWith(link);
    // rules 6 and 7, what a receipt or an accepted commit's (reveal's) ack says of records 0 and 1:
    // its seat is the header's, its i and its prev — checked before rule 8 sets it aside
    const held = heldRecordProblem(ctx.t, item);
    if (held) failWith(held);
    // rule 8: an accepted seed behind a void that hides the server's (a seed refused for the house's
    // reason, behind such a void, fails in checkAck: rule 7 tells it)
    const seedHeld = seedHeldByVoid(shape, ctx.t, item);
    if (seedHeld) failWith(seedHeld);
    if (p === "header") {
      if (!jsonEqual(b, ctx.header)) fail("the header your client accepted is not the transcript's header: the server signed another header for this hand", 0, show(ctx.header, 200), show(b, 200));
    } else if (p === "player") {
      // rule 4: the player's own word (anyone can sign one for any key and seat): it fails nothing;
      // a key the header does not list for the seat is the warning key_claim
      const listed = playerKey(ctx, b.seat);
      if (listed !== b.player_key) ctx.keyClaims.push({ item: k, seat: b.seat, player_key: b.player_key, listed });
    } else if (p === "head") {
      // rule 5: record i exists and its h is the body's (linkProblem, above): nothing more
    } else if (p === "receipt") {
      // rule 6: its seat and prev (records 0 and 1) were checked first (heldRecordProblem, above)
      if (b.kind === "commit") {
        const e = entryOf(ctx.rec("commitments"), b.seat);
        if (!e || e.commit !== b.value) fail("the server accepted seat " + b.seat + "'s commitment, but record 1 shows another", 1, b.value, show(e ? e.commit : "(no entry)"));
      } else {
        const e = entryOf(ctx.rec("reveals"), b.seat);
        if (!e || e.status !== "revealed" || e.seed !== b.value) {
          fail("the server accepted seat " + b.seat + "'s seed, but record 2 does not show it revealed", 2, show({ status: "revealed", seed: b.value }), show(e ? { status: e.status, seed: e.seed } : "(no entry)"));
        }
      }
    } else return checkAck(ctx, b, fail);
    return false;
  }

  /** The fields of §4's R, in the order the messages name them. */
  const RULE_FIELDS = ["commission_bps", "max_missed_turns", "min_players", "point_value", "seats", "turn_seconds"];

  /** What differs between this hand's rules (the transcript header's) and another header's,
      as text ("commission_bps 500 here, 700 in hand 1; rules_id …"), or "" when nothing does. */
  function rulesDiffer(hd, b) {
    const where = "in hand " + b.hand_no;
    const out = [];
    if (!isPlainObject(b.rules)) out.push("rules " + show(hd.rules) + " here, " + show(b.rules) + " " + where);
    else {
      const extra = Object.keys(b.rules).filter((f) => !RULE_FIELDS.includes(f)).sort();
      for (const f of RULE_FIELDS.concat(extra)) {
        if (!jsonEqual(b.rules[f], hd.rules[f])) out.push(f + " " + show(hd.rules[f]) + " here, " + show(b.rules[f]) + " " + where);
      }
    }
    if (b.rules_id !== hd.rules_id) out.push("rules_id " + show(hd.rules_id) + " here, " + show(b.rules_id) + " " + where);
    return out.join("; ");
  }

  /** The seat numbers of a header's seats, or null when its seats are not a list of objects with
      integer seats (or an empty one): such a header names no seat the button could move to. */
  function seatNumbers(seats) {
    if (!Array.isArray(seats) || seats.length === 0) return null;
    if (!seats.every((s) => isPlainObject(s) && isInt(s.seat, -MAX_SAFE, MAX_SAFE))) return null;
    return seats.map((s) => s.seat);
  }

  /** The next of these seat numbers after dealer d, ascending and wrapping (RULES.md D3), or null
      when there is no such seat (d not an integer, or no seats). */
  function nextSeat(nums, d) {
    if (nums === null || !isInt(d, -MAX_SAFE, MAX_SAFE)) return null;
    const sorted = nums.slice().sort((a, b) => a - b);
    const after = sorted.find((s) => s > d);
    return after !== undefined ? after : sorted[0];
  }

  /** rule 3's dealer (RULES.md D3) for a header b the server signed for the hand just before this
      one (hand_no one less) or just after it (one more): the later hand's dealer is the next seat of
      its own seats after the earlier hand's dealer. Why not, as {msg, expected, found} — the dealer
      the button should have moved to expected, the signed one found; null expected when b has no
      integer dealer, or seats that are not objects with integer seats — or null (for another hand,
      nothing: only consecutive hands say whom the button left). */
  function dealerProblem(hd, b, handNo) {
    const before = b.hand_no === handNo - 1;
    if (!before && b.hand_no !== handNo + 1) return null;
    const [from, to, toNo] = before ? [b, hd, handNo] : [hd, b, b.hand_no];
    const fromNo = toNo - 1;
    const found = to.dealer === undefined ? show(undefined) : to.dealer;
    if (!isInt(b.dealer, -MAX_SAFE, MAX_SAFE) || seatNumbers(b.seats) === null) {
      const what = !isInt(b.dealer, -MAX_SAFE, MAX_SAFE) ? "no integer dealer (" + show(b.dealer) + ")" : "seats that are not objects with integer seats";
      return {
        msg: "the server signed hand " + b.hand_no + " of this table with " + what + ": it gives no dealer the button should have moved to " + (before ? "in this hand" : "in it") + " (RULES.md D3)",
        expected: null,
        found,
      };
    }
    const want = nextSeat(seatNumbers(to.seats), from.dealer);
    if (want === to.dealer) return null;
    return {
      msg: "the server signed hand " + fromNo + " of this table dealt by seat " + from.dealer + " and hand " + toNo + " dealt by seat " + show(to.dealer) +
        ": the button moves to the next seat each hand, seat " + want + ", the next of hand " + toNo + "'s seats " + show(seatNumbers(to.seats)) + " after seat " + from.dealer + " (RULES.md D3)",
      expected: want,
      found,
    };
  }

  /** rule 3 for an item of another hand of the same table (its body's table_id the transcript's,
      its hand_no another): a header item whose signature verifies under the transcript header's
      public_key has this hand's rules and rules_id — a table's rules never change (RULES.md D38),
      so two rule sets the server signed for one table are its proof that it changed them — and, for
      the hand just before or just after this one, a dealer that follows this hand's (D3,
      dealerProblem). Rules that differ fail at record 0: for the first of rules, rules_id that
      differs, its value in the kept header expected and in the transcript header's found. One
      whose signature does not verify under that key (the key was rotated in between, §16) is
      counted with the other hands and ignored, as is every other item of another hand (classify
      counts them all as other_hand; formProblem has checked their form). */
  async function checkOtherHeader(ctx, k, item) {
    const T = ctx.t;
    const hd = ctx.header;
    const b = item.body;
    if (item.purpose !== "header" || b.table_id !== T.table_id || b.hand_no === T.hand_no) return;
    const v = await verifySig(true, hd.public_key, "header", b, item.sig);
    if (!v.ok) return;
    const fail = (msg, expected, found) => {
      const f = new CheckFailure("evidence", "evidence item " + k + " (header): " + msg, 0, expected, found);
      f.item = k;
      throw f;
    };
    // the first of rules, rules_id that differs: its value in the kept header expected, in the
    // transcript's header found (rule 3). (hd.rules has exactly RULE_FIELDS, checked by the format
    // check, so jsonEqual agrees with rulesDiffer on whether the rules differ.)
    const differ = rulesDiffer(hd, b);
    if (differ !== "") {
      const field = jsonEqual(b.rules, hd.rules) ? "rules_id" : "rules";
      fail("the server signed hand " + b.hand_no + " of table " + T.table_id + " with other rules than this hand's (" + differ + "): a table's rules never change (RULES.md D38)",
        show(b[field]), show(hd[field]));
    }
    const dealer = dealerProblem(hd, b, T.hand_no);
    if (dealer) fail(dealer.msg, dealer.expected, dealer.found);
  }

  /** rule 8: the refusals of a commit (a reveal) the void came before that owed the seat its
      window — rule 7 holds of them up to D35, whose check needs record 1 (2), which the log
      never reached — as the set of their indices. A refusal the rules justify, or an ack that
      fails rule 7 (or any rule) before D35, is checked as any. */
  async function owedAfterVoid(ctx, items) {
    const T = ctx.t;
    const shape = logShape(T);
    const owed = new Set();
    for (let k = 0; k < items.length; k++) {
      const item = items[k];
      if (formProblem(item) !== null || item.purpose !== "ack" || item.body.outcome !== "refused") continue;
      if (item.body.table_id !== T.table_id || item.body.hand_no !== T.hand_no) continue;
      if (voidedBeforeIts(shape, item) === null || cutByVoid(shape, T, item) !== null) continue;
      try {
        if (await checkItem(ctx, k, item)) owed.add(k);
      } catch (e) {
        if (!(e instanceof CheckFailure)) throw e;
      }
    }
    return owed;
  }

  // ---------------------------------------------------------------- the check

  async function checkEvidence(ctx) {
    if (ctx.evidence === null) return new Skip("no evidence file was given");
    const T = ctx.t;
    const items = ctx.evidence;
    const where = "table " + T.table_id + ", hand " + T.hand_no;
    if (!Array.isArray(items)) {
      throw new CheckFailure("evidence", "an evidence file is a JSON array of signed items (§15)", null, "an array", show(items, 120));
    }
    // rule 8: which refusals the void came before owed the seat its window (judged with the
    // header and the replay, which the checks before have read)
    const owed = ctx.v2 ? await owedAfterVoid(ctx, items) : undefined;
    const c = counts(T, items, owed);
    ctx.evidenceCounts = c;
    ctx.keyClaims = [];
    const classes = classify(T, items, owed);
    const none = () => {
      const msg = "no item of this evidence is for " + where + ": evidence that proves nothing does not pass";
      throw new CheckFailure("evidence", msg + " — " + countText(c), null, "at least one item for " + where, countText(c));
    };
    if (!ctx.v2) {
      // §14, Appendix C: evidence given for a v1 transcript always fails
      const k = classes.findIndex((x) => x === "applied" || x === "after_void");
      if (k < 0) none();
      const f = new CheckFailure("evidence", "evidence item " + k + " is rummy-pf/v2 evidence of " + where + ": it refutes this rummy-pf/v1 copy of the hand (a downgrade)", null, "no v2 evidence of a v1 hand", show(items[k].purpose));
      f.item = k;
      throw f;
    }
    for (let k = 0; k < items.length; k++) {
      if (classes[k] === "malformed") {
        const f = new CheckFailure("evidence", "evidence item " + k + " is not a signed object of one of §15's forms: " + formProblem(items[k]), null, "{purpose, body, sig} of §15", show(items[k], 200));
        f.item = k;
        throw f;
      }
      if (classes[k] === "applied") await checkItem(ctx, k, items[k]);
      // rule 3: a header the server signed for another hand of this table has this hand's rules
      // (and, for the hand just before or after, a dealer that follows this hand's)
      else if (classes[k] === "other_hand") await checkOtherHeader(ctx, k, items[k]);
    }
    // rule 1: at least one item is for this hand (its table and hand); one counted after_void (rule 8) is
    if (c.applied + c.after_void === 0) none();
    // rule 8: evidence that applies to nothing (every item after the void) is skipped, never passed
    if (c.applied === 0) return new Skip("every item of the evidence for " + where + " is for a record the void came before: nothing could be checked — " + countText(c));
    return true;
  }

  RummyPF.verify.register("evidence", checkEvidence);
  RummyPF.verifyEvidence = { counts, countText, formProblem, dealerProblem };
})(typeof window !== "undefined" ? window : globalThis);

/* rummy-pf browser verifier: the hand itself (docs/fairness.md §14 checks 7-12:
   deal, replay, time, points, penalties, settlement; Appendices A and B).  Loaded
   after verify.js; registers its checks there.  The replay keeps the state after
   every record (ctx.after), which the evidence check needs to judge a refusal (§15). */
(function (root) {
  "use strict";
  const RummyPF = root.RummyPF;
  const U = RummyPF.util;
  const cards = RummyPF.cards;
  const groups = RummyPF.groups;
  const { Hand, Illegal } = RummyPF.hand;
  const { show, isPlainObject, jsonEqual } = U;
  const { CheckFailure, Skip, isInt, dealtAndForfeits } = RummyPF.verify.base;

  // ---------------------------------------------------------------- events

  /** Fields a later check judges (§14 check 8): compared there, not by equality here. */
  function maskedField(ev, key) {
    switch (ev.kind) {
      case "forfeit":
      case "drop":
      case "leave":
        return key === "points";
      case "declare":
        return ev.data.valid === false ? key === "points" : key === "groups";
      case "end":
        return key === "counted" || key === "settlement";
    }
    return false;
  }

  const CARD_FIELDS = ["card", "finish", "wild_indicator", "open"];

  function compareEvents(check, i, expected, found, decks) {
    const isCard = (x) => isInt(x, 0, cards.packSize(decks) - 1);
    for (let k = 0; k < Math.max(expected.length, found.length); k++) {
      const e = expected[k];
      const f = found[k];
      const where = "event " + k;
      if (!e) throw new CheckFailure(check, where + ": an event after the last one the record should hold", i, null, show(f));
      if (!f) throw new CheckFailure(check, where + ": the " + e.kind + " event is missing", i, show(e), null);
      if (f.kind !== e.kind || f.seat !== e.seat) {
        throw new CheckFailure(check, where + ": wrong event", i, show({ kind: e.kind, seat: e.seat }), show({ kind: f.kind, seat: f.seat }));
      }
      for (const part of ["data", "private"]) {
        // a field a later check judges is left to it entirely, its presence included
        const judged = (key) => part === "data" && maskedField(e, key);
        const ek = Object.keys(e[part])
          .filter((k) => !judged(k))
          .sort();
        const fk = Object.keys(f[part])
          .filter((k) => !judged(k))
          .sort();
        if (!jsonEqual(ek, fk)) {
          throw new CheckFailure(check, where + " (" + e.kind + "): the fields of " + part, i, show(ek), show(fk));
        }
        for (const key of ek) {
          if (!jsonEqual(e[part][key], f[part][key])) {
            let msg = where + " (" + e.kind + (e.seat === null ? "" : " of seat " + e.seat) + "): " + part + "." + key;
            const a = e[part][key];
            const b = f[part][key];
            if (CARD_FIELDS.includes(key) && isCard(a)) {
              msg += ": the replay gives " + pretty(a, decks) + " (id " + a + ")";
              msg += isCard(b) ? ", the log shows " + pretty(b, decks) + " (id " + b + ")" : "";
            }
            throw new CheckFailure(check, msg, i, show(a), show(b));
          }
        }
      }
    }
  }

  /** B.3 validity of shown groups: a list of lists of card ids, each a valid group. */
  function groupsOf(hand, x) {
    if (!Array.isArray(x)) return { error: "groups are not a list" };
    const kinds = [];
    for (const g of x) {
      if (!Array.isArray(g) || !g.every((c) => isInt(c, 0, hand.decks * 53 - 1))) return { error: "a group is not a list of card ids" };
      const k = groups.classify(
        g.map((c) => hand.desc(c)),
        hand.wildRank,
      );
      if (!k) return { error: "not a valid group: " + show(g) };
      kinds.push(k);
    }
    return { kinds };
  }

  function sameMultiset(a, b) {
    if (a.length !== b.length) return false;
    const x = a.slice().sort((p, q) => p - q);
    const y = b.slice().sort((p, q) => p - q);
    return x.every((v, k) => v === y[k]);
  }

  function declareShown(kinds) {
    const seqs = kinds.filter(groups.isSequence).length;
    return seqs >= 2 && kinds.includes("pure");
  }

  // ---------------------------------------------------------------- deal and replay

  function newHand(ctx) {
    return new Hand({
      seats: ctx.seats,
      rules: ctx.rules,
      dealer: ctx.header.dealer,
      decks: ctx.decks,
      kBytes: ctx.K,
      oneSeatWins: ctx.v2,
    });
  }

  /** A card for people: rank and suit symbol ("10♥"), or "joker". */
  function pretty(id, decks) {
    const fc = cards.face(id, decks);
    if (fc === "JK") return "joker";
    return (fc[0] === "T" ? "10" : fc[0]) + cards.SUIT_SYMBOLS[fc[1]];
  }

  function describeEvent(e, decks) {
    const f = (c) => pretty(c, decks);
    const d = e.data;
    const p = e.private;
    switch (e.kind) {
      case "deal":
        return "Deal: dealer seat " + d.dealer + ", seat " + d.first + " plays first; wild indicator " + f(d.wild_indicator) + ", open card " + f(d.open) + ", " + d.closed_count + " cards in the closed pile";
      case "hand":
        return "Seat " + e.seat + " is dealt 13 cards";
      case "forfeit":
        return "Seat " + e.seat + " withheld its reveal: it sits out and is charged " + d.points;
      case "turn":
        return "Turn " + d.turn_no + ": seat " + e.seat + " to draw";
      case "draw":
        return "Seat " + e.seat + (d.by_clock ? " (by the clock)" : "") + " draws " + f(d.source === "open" ? d.card : p.card) + " from the " + d.source + " pile";
      case "discard":
        return "Seat " + e.seat + (d.by_clock ? " (by the clock)" : "") + " discards " + f(d.card);
      case "clock":
        return "The clock runs out for seat " + e.seat + " (missed " + d.missed + " in a row, " + d.phase + " phase)";
      case "drop":
        return "Seat " + e.seat + (d.reason === "clock" ? " is dropped by the clock" : " drops") + ": " + d.points + " points";
      case "leave":
        return "Seat " + e.seat + " leaves the table: " + d.points + " points";
      case "reshuffle":
        return "Reshuffle " + d.k + ": the open pile but its top card becomes the closed pile (" + d.count + " cards)";
      case "declare":
        return d.valid
          ? "Seat " + e.seat + " declares with " + f(p.finish) + " face down: a valid declare"
          : "Seat " + e.seat + " declares with " + f(p.finish) + ": a wrong declare, " + d.points + " points";
      case "end":
        return "The hand ends: seat " + d.winner + " wins " + (d.reason === "declare" ? "with a valid declare" : d.reason === "last_standing" ? "as the last one standing" : "(" + d.reason + ")");
    }
    return e.kind;
  }

  function recordSteps(ctx, hand, i, t, action) {
    hand.onEvent = (e, snap) => {
      if (e.kind === "hand") return; // the deal step shows the hands
      const last = ctx.steps[ctx.steps.length - 1];
      if (e.kind === "turn" && last && last.record === i) {
        // the turn passing is shown with the step that passed it
        last.state = snap;
        last.text += " · turn " + e.data.turn_no + ": seat " + e.seat + " to draw";
        last.events.push(e);
        return;
      }
      ctx.steps.push({ record: i, t: t === undefined ? null : t, action: action || null, event: e, events: [e], text: describeEvent(e, ctx.decks), state: snap });
    };
  }

  async function checkDeal(ctx) {
    const T = ctx.t;
    const log = T.log;
    if (T.server_seed === "") return new Skip("the server seed was not revealed");
    const r2 = ctx.rec("reveals");
    if (!r2) return new Skip("the log ends before the reveals");
    const { dealt, forfeits } = dealtAndForfeits(ctx);
    const r3 = ctx.rec("deal");
    const needed = ctx.v2 ? 1 : 2;
    if (dealt.length < needed) {
      if (r3) {
        throw new CheckFailure(
          "deal",
          ctx.v2 ? "no seat is dealt in, so there is no deal (the hand is void, D29)" : "fewer than two seats are dealt in, so the v1 hand is void",
          3,
          "a void record",
          "a deal record",
        );
      }
      // judged: nothing may be dealt, and nothing was
      return true;
    }
    if (!r3) {
      if (!ctx.v2 && log.length > 3) {
        throw new CheckFailure("deal", "two or more seats are dealt in, so a v1 hand is dealt", 3, "a deal record", "a void record");
      }
      return new Skip("the hand was voided before the deal");
    }
    const hand = newHand(ctx);
    recordSteps(ctx, hand, 3, r3.t, null);
    const events = hand.deal(ctx.deck, dealt, forfeits);
    compareEvents("deal", 3, events, r3.events, ctx.decks);
    ctx.hand = hand;
    ctx.expected = { 3: events };
    ctx.after[3] = hand.snapshot();
    if (hand.phase === "ended") ctx.endRecord = 3;
    return true;
  }

  async function checkReplay(ctx) {
    const log = ctx.t.log;
    const hand = ctx.hand;
    if (!hand) return new Skip("nothing was dealt");
    for (let i = 4; i < log.length; i++) {
      const r = log[i];
      if (r.type === "void") {
        if (hand.phase === "ended") throw new CheckFailure("replay", "a void record after the end of the hand", i, "no record after the end", "void");
        break;
      }
      recordSteps(ctx, hand, i, r.t, r.action);
      let events;
      try {
        events = await hand.apply(r.action);
      } catch (e) {
        if (e instanceof Illegal) throw new CheckFailure("replay", "an illegal action: " + e.message, i, "a legal action", show(r.action));
        throw e;
      }
      compareEvents("replay", i, events, r.events, ctx.decks);
      ctx.expected[i] = events;
      ctx.after[i] = hand.snapshot();
      // the valid declare's groups, by Appendix B.3
      events.forEach((e, k) => {
        if (e.kind === "declare" && e.data.valid) {
          const shown = r.events[k].data.groups;
          const kept = hand.seat.get(e.seat).cards;
          const g = groupsOf(hand, shown);
          if (g.error) throw new CheckFailure("replay", "event " + k + " (declare): " + g.error, i, "an arrangement of the kept 13 (B.3)", show(shown));
          if (!sameMultiset([].concat(...shown), kept)) {
            throw new CheckFailure("replay", "event " + k + " (declare): the groups are not the kept 13 cards", i, show(kept), show(shown));
          }
          if (!declareShown(g.kinds)) {
            throw new CheckFailure("replay", "event " + k + " (declare): the groups do not have two sequences, one pure", i, "≥ 2 sequences, ≥ 1 pure", show(g.kinds));
          }
        }
      });
      if (hand.phase === "ended") ctx.endRecord = i;
    }
    if (!ctx.isVoid && hand.phase !== "ended") {
      throw new CheckFailure("replay", "the log ends before the hand does", log.length - 1, "the end of the hand", "no more records");
    }
    return true;
  }

  // ---------------------------------------------------------------- time (v2)

  async function checkTime(ctx) {
    const log = ctx.t.log;
    const hd = ctx.header;
    for (let i = 1; i < log.length; i++) {
      if (log[i].t < log[i - 1].t) throw new CheckFailure("time", "t decreases", i, "at least " + log[i - 1].t, log[i].t);
    }
    const r1 = ctx.rec("commitments");
    if (r1 && r1.commitments.commits.some((c) => c.commit === null)) {
      const want = log[0].t + hd.commit_ms;
      if (r1.t < want) throw new CheckFailure("time", "a seat's commit is null but the commit window was closed early", 1, "t ≥ " + want, r1.t);
    }
    const r2 = ctx.rec("reveals");
    if (r1 && r2) {
      const withheld = r2.reveals.some((e, k) => e.status === "withheld" && r1.commitments.commits[k].commit !== null);
      const want = r1.t + hd.reveal_ms;
      if (withheld && r2.t < want) throw new CheckFailure("time", "a seat is withheld but the reveal window was closed early", 2, "t ≥ " + want, r2.t);
    }
    let turnStart = null;
    for (let i = 3; i < log.length; i++) {
      const r = log[i];
      if (r.type === "action" && r.action.kind === "timeout") {
        if (turnStart === null) throw new CheckFailure("time", "a timeout with no turn begun", i, "a turn event before it", null);
        const want = log[turnStart].t + 1000 * ctx.rules.turn_seconds;
        if (r.t < want) {
          throw new CheckFailure("time", "the clock moved before the turn's time was up (turn began at record " + turnStart + ")", i, "t ≥ " + want, r.t);
        }
      }
      if ((r.type === "deal" || r.type === "action") && r.events.some((e) => e.kind === "turn")) turnStart = i;
    }
    return true;
  }

  // ---------------------------------------------------------------- points, penalties, settlement

  function endEvent(ctx) {
    const r = ctx.t.log[ctx.endRecord];
    return r.events[r.events.length - 1];
  }

  async function checkPoints(ctx) {
    const T = ctx.t;
    if (T.result === null) return new Skip("the hand is void");
    const hand = ctx.hand;
    const exp = hand.endInfo;
    const endEv = endEvent(ctx);
    const counted = endEv.data.counted;
    const rec = ctx.endRecord;
    if (!isPlainObject(counted)) throw new CheckFailure("points", "the end event's counted is not an object", rec, "an object", show(counted));
    const wantKeys = Object.keys(exp.counted).sort();
    const gotKeys = Object.keys(counted).sort();
    if (!jsonEqual(wantKeys, gotKeys)) {
      throw new CheckFailure("points", "the end event must count every seat still in at the end", rec, show(wantKeys), show(gotKeys));
    }
    for (const s of wantKeys) {
      const e = counted[s];
      const where = "seat " + s + "'s count";
      const held = hand.seat.get(Number(s)).cards;
      if (!isPlainObject(e) || !jsonEqual(Object.keys(e).sort(), ["groups", "loose", "points"])) {
        throw new CheckFailure("points", where + " is not {points, groups, loose}", rec, "{points, groups, loose}", show(e));
      }
      const g = groupsOf(hand, e.groups);
      if (g.error) throw new CheckFailure("points", where + ": " + g.error, rec, "valid groups (B.1)", show(e.groups));
      if (!Array.isArray(e.loose) || !e.loose.every((c) => isInt(c, 0, hand.decks * 53 - 1))) {
        throw new CheckFailure("points", where + ": loose is not a list of card ids", rec, "a list of card ids", show(e.loose));
      }
      if (!sameMultiset([].concat(...e.groups, e.loose), held)) {
        throw new CheckFailure("points", where + ": groups and loose are not the seat's cards", rec, show(held), show([].concat(...e.groups, e.loose)));
      }
      const k = g.kinds;
      if (!(k.length === 0 || (k.length === 1 && k[0] === "pure") || declareShown(k))) {
        throw new CheckFailure("points", where + ": the groups are neither ≥ 2 sequences with a pure one, one pure sequence, nor none", rec, "a shape of B.3", show(k));
      }
      const looseSum = e.loose.reduce((a, c) => a + cards.value(hand.desc(c), hand.wildRank), 0);
      if (e.points !== looseSum) throw new CheckFailure("points", where + ": points are not the loose cards' value", rec, looseSum, show(e.points));
      if (e.points !== exp.counted[s].points) {
        throw new CheckFailure("points", where + ": not the best arrangement (D13)", rec, exp.counted[s].points, show(e.points));
      }
    }
    const res = T.result;
    if (res.winner !== exp.winner) throw new CheckFailure("points", "the result's winner", null, exp.winner, res.winner);
    if (res.reason !== exp.reason) throw new CheckFailure("points", "the result's reason", null, exp.reason, res.reason);
    if (res.points[String(exp.winner)] !== 0) throw new CheckFailure("points", "the winner's points in the result", null, 0, res.points[String(exp.winner)]);
    for (const s of wantKeys) {
      if (res.points[s] !== exp.counted[s].points) {
        throw new CheckFailure("points", "seat " + s + "'s points in the result", null, exp.counted[s].points, res.points[s]);
      }
    }
    return true;
  }

  async function checkPenalties(ctx) {
    // the penalties in the events are judged whenever there are events (a void hand's too:
    // the replay leaves them to this check); those in the result when there is one
    const T = ctx.t;
    if (!ctx.hand) return new Skip("nothing was dealt");
    const log = T.log;
    const idx = Object.keys(ctx.expected)
      .map(Number)
      .sort((a, b) => a - b);
    for (const i of idx) {
      const exp = ctx.expected[i];
      exp.forEach((e, k) => {
        const penal = ["forfeit", "drop", "leave"].includes(e.kind) || (e.kind === "declare" && e.data.valid === false);
        if (!penal) return;
        const got = log[i].events[k].data.points;
        if (got !== e.data.points) {
          throw new CheckFailure("penalties", "event " + k + " (" + e.kind + ") of seat " + e.seat + ": the penalty", i, e.data.points, show(got));
        }
      });
    }
    const hand = ctx.hand;
    if (T.result === null) return true;
    for (const s of ctx.seats) {
      const st = hand.seat.get(s);
      if (["forfeit", "dropped", "left", "wrong_declare"].includes(st.status)) {
        const got = T.result.points[String(s)];
        if (got !== st.points) throw new CheckFailure("penalties", "seat " + s + " (" + st.status + "): the penalty in the result", null, st.points, got);
      }
    }
    return true;
  }

  function compareSettlement(where, rec, want, got) {
    if (!isPlainObject(got)) throw new CheckFailure("settlement", where + " is not an object", rec, show(want), show(got));
    const keys = Object.keys(want);
    if (!jsonEqual(Object.keys(got).sort(), keys.slice().sort())) {
      throw new CheckFailure("settlement", where + ": its fields", rec, show(keys.slice().sort()), show(Object.keys(got).sort()));
    }
    for (const k of ["winner", "point_value", "commission_bps", "points", "pot", "commission", "deltas"]) {
      if (!jsonEqual(want[k], got[k])) throw new CheckFailure("settlement", where + ": " + k + " (D19)", rec, show(want[k]), show(got[k]));
    }
  }

  async function checkSettlement(ctx) {
    const T = ctx.t;
    if (T.result === null) return new Skip("the hand is void");
    const want = ctx.hand.result.settlement;
    compareSettlement("the result's settlement", null, want, T.result.settlement);
    compareSettlement("the end event's settlement", ctx.endRecord, want, endEvent(ctx).data.settlement);
    return true;
  }

  RummyPF.verify.register("deal", checkDeal);
  RummyPF.verify.register("replay", checkReplay);
  RummyPF.verify.register("time", checkTime);
  RummyPF.verify.register("points", checkPoints);
  RummyPF.verify.register("penalties", checkPenalties);
  RummyPF.verify.register("settlement", checkSettlement);
  RummyPF.verify.describeEvent = describeEvent;
  RummyPF.verify.pretty = pretty;
  RummyPF.verify.sameMultiset = sameMultiset;
})(typeof window !== "undefined" ? window : globalThis);

/* rummy-pf browser verifier: the hand as a state machine (docs/fairness.md
   Appendix A).  It deals from a deck, applies actions and produces the events
   the log must hold.  An illegal action throws an Illegal error. */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});
  const cards = RummyPF.cards;
  const fairness = RummyPF.fairness;
  const arrange = RummyPF.arrange;

  class Illegal extends Error {
    constructor(message) {
      super(message);
      this.name = "Illegal";
    }
  }

  function ev(kind, seat, data, priv) {
    return { kind, seat, data, private: priv || {} };
  }

  /** Settlement of D19 with exact integers. points: {seat: points}. */
  function settle(winner, points, pointValue, commissionBps) {
    const pv = BigInt(pointValue);
    let pot = 0n;
    const deltas = {};
    for (const s of Object.keys(points)) {
      if (Number(s) === winner) continue;
      const pays = BigInt(points[s]) * pv;
      pot += pays;
      deltas[s] = Number(-pays);
    }
    const commission = (pot * BigInt(commissionBps)) / 10000n;
    deltas[String(winner)] = Number(pot - commission);
    const pts = {};
    for (const s of Object.keys(points)) pts[s] = points[s];
    return {
      winner,
      point_value: pointValue,
      commission_bps: commissionBps,
      points: pts,
      pot: Number(pot),
      commission: Number(commission),
      deltas,
    };
  }

  class Hand {
    /** opts: {seats: [header seats ascending], rules, dealer, decks, kBytes, oneSeatWins (v2)} */
    constructor(opts) {
      this.rules = opts.rules;
      this.headerSeats = opts.seats.slice();
      this.dealer = opts.dealer;
      this.decks = opts.decks;
      this.kBytes = opts.kBytes;
      this.oneSeatWins = opts.oneSeatWins !== false;
      this.seat = new Map();
      for (const s of this.headerSeats) {
        this.seat.set(s, {
          status: "playing",
          cards: [],
          drawn_any: false,
          drawn_this_turn: null,
          missed: 0,
          points: null,
        });
      }
      this.indicator = null;
      this.wildRank = null;
      this.closed = [];
      this.open = [];
      this.outOfPlay = [];
      this.turn = null;
      this.phase = "draw";
      this.turnNo = 0;
      this.reshuffles = 0;
      this.result = null;
      this.endInfo = null;
      this.events = null;
      this.onEvent = null;
    }

    desc(id) {
      return cards.describe(id, this.decks);
    }

    emit(e) {
      this.events.push(e);
      if (this.onEvent) this.onEvent(e, this.snapshot());
    }

    snapshot() {
      const seats = {};
      for (const [s, st] of this.seat) {
        seats[s] = {
          status: st.status,
          cards: st.cards.slice(),
          points: st.points,
          missed: st.missed,
          drawn_this_turn: st.drawn_this_turn,
        };
      }
      return {
        seats,
        open: this.open.slice(),
        closed_count: this.closed.length,
        indicator: this.indicator,
        turn: this.turn,
        phase: this.phase,
        turn_no: this.turnNo,
        reshuffles: this.reshuffles,
        out_of_play: this.outOfPlay.length,
      };
    }

    playing() {
      return this.headerSeats.filter((s) => this.seat.get(s).status === "playing");
    }

    /** A.2: deal the deck to the dealt seats; forfeits are the withheld seats. */
    deal(deck, dealt, forfeits) {
      this.events = [];
      for (const s of forfeits) {
        const st = this.seat.get(s);
        st.status = "forfeit";
        st.points = 20;
      }
      const order = fairness.dealingOrder(dealt, this.dealer);
      const d = fairness.dealDeck(deck, order);
      for (const s of order) this.seat.get(s).cards = d.hands.get(s).slice();
      this.indicator = d.indicator;
      this.wildRank = cards.wildRankOf(this.desc(d.indicator));
      this.open = [d.open];
      this.closed = d.closed.slice();
      this.turn = order[0];
      this.phase = "draw";
      this.turnNo = 1;
      this.emit(
        ev("deal", null, {
          dealer: this.dealer,
          first: order[0],
          seats: dealt.slice().sort((a, b) => a - b),
          forfeits: forfeits.slice().sort((a, b) => a - b),
          wild_indicator: d.indicator,
          open: d.open,
          closed_count: d.closed.length,
        }),
      );
      for (const s of order) this.emit(ev("hand", s, { count: 13 }, { cards: d.hands.get(s).slice() }));
      for (const s of forfeits.slice().sort((a, b) => a - b)) this.emit(ev("forfeit", s, { points: 20 }));
      if (order.length >= 2) {
        this.emit(ev("turn", order[0], { turn_no: 1, phase: "draw" }));
      } else if (order.length === 1 && this.oneSeatWins) {
        this.end(order[0], "last_standing");
      }
      return this.events;
    }

    /** A.3 and A.4: apply one logged action; returns its events. */
    async apply(action) {
      this.events = [];
      if (this.phase === "ended") throw new Illegal("the hand has already ended");
      const s = action.seat;
      const st = this.seat.get(s);
      if (!st) throw new Illegal("seat " + s + " is not a seat of the hand");
      if (st.status !== "playing") throw new Illegal("seat " + s + " is not playing (" + st.status + ")");
      const kind = action.kind;
      if (kind === "leave") {
        const wasOnTurn = this.turn === s;
        this.emit(ev("leave", s, { points: 40 }, { cards: st.cards.slice() }));
        this.removal(s, "left", 40);
        this.afterRemoval(s, wasOnTurn);
        return this.events;
      }
      if (this.turn !== s) throw new Illegal("seat " + s + " is not on turn (seat " + this.turn + " is)");
      switch (kind) {
        case "timeout":
          await this.timeout(s);
          break;
        case "draw_closed":
          if (this.phase !== "draw") throw new Illegal("draw_closed outside the draw phase");
          await this.drawClosed(s, false);
          break;
        case "draw_open":
          if (this.phase !== "draw") throw new Illegal("draw_open outside the draw phase");
          if (this.open.length === 0) throw new Illegal("draw_open from an empty open pile");
          this.drawOpen(s);
          break;
        case "drop":
          if (this.phase !== "draw") throw new Illegal("drop outside the draw phase");
          this.drop(s, "drop");
          break;
        case "discard":
          if (this.phase !== "discard") throw new Illegal("discard outside the discard phase");
          if (!st.cards.includes(action.card)) throw new Illegal("card " + action.card + " is not in seat " + s + "'s hand");
          this.discard(s, action.card, false);
          break;
        case "declare":
          if (this.phase !== "discard") throw new Illegal("declare outside the discard phase");
          if (!st.cards.includes(action.card)) throw new Illegal("card " + action.card + " is not in seat " + s + "'s hand");
          this.declare(s, action.card, action.hint);
          break;
        default:
          throw new Illegal("unknown action " + kind);
      }
      return this.events;
    }

    async timeout(s) {
      const st = this.seat.get(s);
      st.missed += 1;
      this.emit(ev("clock", s, { missed: st.missed, phase: this.phase }));
      if (st.missed >= this.rules.max_missed_turns) {
        this.drop(s, "clock");
        return;
      }
      if (this.phase === "draw") await this.drawClosed(s, true);
      const card = st.drawn_this_turn;
      if (card === null) throw new Illegal("the clock has no card drawn this turn to discard");
      this.discard(s, card, true);
    }

    async reshuffle() {
      if (this.open.length < 2) throw new Illegal("the closed pile is empty and the open pile has fewer than 2 cards");
      const k = this.reshuffles + 1;
      const top = this.open[this.open.length - 1];
      const rest = this.open.slice(0, -1);
      const closed = await fairness.reshuffle(this.kBytes, k, rest);
      this.reshuffles = k;
      this.closed = closed;
      this.open = [top];
      this.emit(ev("reshuffle", null, { k, count: closed.length }, { closed: closed.slice() }));
    }

    async drawClosed(s, byClock) {
      if (this.closed.length === 0) await this.reshuffle();
      const card = this.closed.shift();
      this.take(s, card);
      this.emit(ev("draw", s, { source: "closed", by_clock: byClock }, { card }));
    }

    drawOpen(s) {
      const card = this.open.pop();
      this.take(s, card);
      this.emit(ev("draw", s, { source: "open", card, by_clock: false }));
    }

    take(s, card) {
      const st = this.seat.get(s);
      st.cards.push(card);
      st.drawn_any = true;
      st.drawn_this_turn = card;
      this.phase = "discard";
    }

    discard(s, card, byClock) {
      const st = this.seat.get(s);
      st.cards.splice(st.cards.indexOf(card), 1);
      this.open.push(card);
      if (!byClock) st.missed = 0;
      st.drawn_this_turn = null;
      this.emit(ev("discard", s, { card, by_clock: byClock }));
      this.nextTurn(s);
    }

    drop(s, reason) {
      const st = this.seat.get(s);
      const wasOnTurn = this.turn === s;
      const points = st.drawn_any ? 40 : 20;
      this.emit(ev("drop", s, { points, reason }, { cards: st.cards.slice() }));
      this.removal(s, "dropped", points);
      this.afterRemoval(s, wasOnTurn);
    }

    declare(s, card, hint) {
      const st = this.seat.get(s);
      const kept = st.cards.slice();
      kept.splice(kept.indexOf(card), 1);
      if (hint !== undefined) {
        const flat = [].concat(...hint).sort((a, b) => a - b);
        const want = kept.slice().sort((a, b) => a - b);
        if (flat.length !== want.length || flat.some((x, k) => x !== want[k])) {
          throw new Illegal("the declare's hint is not the seat's cards without the finish card");
        }
      }
      const vd = arrange.validDeclare(
        kept.map((id) => this.desc(id)),
        this.wildRank,
      );
      if (vd.valid) {
        st.status = "declared";
        st.cards = kept;
        st.points = 0;
        st.drawn_this_turn = null;
        this.outOfPlay.push(card);
        this.emit(ev("declare", s, { valid: true, groups: vd.groups.map((g) => g.map((k) => kept[k])) }, { finish: card }));
        this.end(s, "declare");
      } else {
        const wasOnTurn = this.turn === s;
        this.emit(ev("declare", s, { valid: false, points: 80 }, { finish: card, cards: st.cards.slice() }));
        this.removal(s, "wrong_declare", 80);
        this.afterRemoval(s, wasOnTurn);
      }
    }

    removal(s, status, points) {
      const st = this.seat.get(s);
      for (const c of st.cards) this.outOfPlay.push(c);
      st.cards = [];
      st.drawn_this_turn = null;
      st.status = status;
      st.points = points;
    }

    afterRemoval(s, wasOnTurn) {
      const p = this.playing();
      if (p.length === 1) this.end(p[0], "last_standing");
      else if (wasOnTurn) this.nextTurn(s);
    }

    nextTurn(s) {
      const p = this.playing();
      if (p.length === 1) {
        this.end(p[0], "last_standing");
        return;
      }
      const after = p.filter((x) => x > s);
      const next = after.length ? after[0] : p[0];
      this.turn = next;
      this.phase = "draw";
      this.turnNo += 1;
      this.emit(ev("turn", next, { turn_no: this.turnNo, phase: "draw" }));
    }

    /** A.5: the end of the hand. */
    end(winner, reason) {
      const w = this.seat.get(winner);
      w.points = 0;
      if (reason === "declare") w.status = "declared";
      const counted = {};
      for (const s of this.playing()) {
        if (s === winner) continue;
        const st = this.seat.get(s);
        const c = arrange.count(
          st.cards.map((id) => this.desc(id)),
          this.wildRank,
        );
        st.points = c.points;
        counted[s] = {
          points: c.points,
          groups: c.groups.map((g) => g.map((k) => st.cards[k])),
          loose: c.loose.map((k) => st.cards[k]),
        };
      }
      const hands = {};
      for (const s of this.headerSeats) {
        const st = this.seat.get(s);
        if (st.cards.length > 0) hands[s] = st.cards.slice();
      }
      const points = {};
      for (const s of this.headerSeats) points[s] = this.seat.get(s).points;
      const settlement = settle(winner, points, this.rules.point_value, this.rules.commission_bps);
      this.phase = "ended";
      this.result = { winner, reason, points, settlement };
      this.endInfo = { winner, reason, counted };
      this.emit(ev("end", winner, { winner, reason, counted, hands, settlement }));
    }
  }

  RummyPF.hand = { Hand, Illegal, settle };
})(typeof window !== "undefined" ? window : globalThis);

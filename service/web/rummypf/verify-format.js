/* rummy-pf browser verifier: check 1, `format` (docs/fairness.md §13, and Appendix C
   for rummy-pf/v1, which is refused unless the user accepts it, §14).  Loaded after
   verify.js; registers itself there. */
(function (root) {
  "use strict";
  const RummyPF = root.RummyPF;
  const B = RummyPF.bytes;
  const U = RummyPF.util;
  const F = RummyPF.fairness;
  const cards = RummyPF.cards;
  const { show, has, isPlainObject, jsonEqual } = U;
  const { V1, V2, MAX_SAFE, ACTION_KINDS, CheckFailure, isInt, isId, isText } = RummyPF.verify.base;

  function Fmt(record, where) {
    const fail = (expected, found) => {
      throw new CheckFailure("format", where + ": expected " + expected, record, expected, show(found));
    };
    return {
      fail,
      sub(name) {
        return Fmt(record, where + "." + name);
      },
      at(k) {
        return Fmt(record, where + "[" + k + "]");
      },
      object(x) {
        if (!isPlainObject(x)) fail("an object", x);
      },
      keys(x, required, optional) {
        if (!isPlainObject(x)) fail("an object", x);
        for (const k of required) if (!has(x, k)) fail('the field "' + k + '"', Object.keys(x));
        for (const k of Object.keys(x)) {
          if (!required.includes(k) && !(optional || []).includes(k)) fail("no field " + JSON.stringify(k), k);
        }
      },
      int(x, lo, hi) {
        if (!isInt(x, lo, hi)) fail("an integer from " + lo + " to " + hi, x);
      },
      hex(x, n) {
        if (!B.isHex(x, n)) fail("hex(" + n + ")", x);
      },
      id(x) {
        if (!isId(x)) fail("an id (1-64 of A-Z a-z 0-9 _ . : -)", x);
      },
      text(x) {
        if (!isText(x)) fail("a text of 1 to 500 characters", x);
      },
      list(x) {
        if (!Array.isArray(x)) fail("a list", x);
      },
      eq(x, want) {
        if (!jsonEqual(x, want)) fail(show(want), x);
      },
      /** hex(32) and a strict Ed25519 key (§9); the key is named. */
      strictKey(x, what) {
        if (!B.isHex(x, 32)) fail("hex(32)", x);
        const problem = RummyPF.ed25519.keyProblem(B.hexToBytes(x));
        if (problem) {
          throw new CheckFailure("format", where + ": " + what + " " + x + " is not a strict Ed25519 key (§9): " + problem, record, "a strict Ed25519 public key", x);
        }
      },
    };
  }

  function recordFields(type, v2) {
    // the fields of each record type (§11, §13; Appendix C for v1): {required, optional}.
    // v2: every record carries "t".  v1 (Appendix C): only action records may carry "t",
    // and need not — an action record with or without it is well formed (covered by the
    // chain, judged by no check); any other v1 record with "t" has a field too many.
    const base = ["i", "h", "type"];
    const t = v2 ? ["t"] : [];
    const optional = !v2 && type === "action" ? ["t"] : [];
    const req = (rest) => ({ required: base.concat(t, rest), optional });
    switch (type) {
      case "header":
        return req(["header", "sig"]);
      case "commitments":
        return req(["commitments", "sig"]);
      case "reveals":
        return req(["reveals"]);
      case "deal":
        return req(["events"]);
      case "action":
        return req(v2 ? ["action", "psig", "events"] : ["action", "events"]);
      case "void":
        return req(["reason"]);
    }
    return null;
  }

  function expectedType(i) {
    return ["header", "commitments", "reveals", "deal"][i] || "action";
  }

  function seatMap(fmt, x, seats, lo, hi) {
    fmt.object(x);
    const want = seats.map(String);
    const got = Object.keys(x);
    if (got.length !== want.length || !want.every((k) => has(x, k))) {
      fmt.fail("one key per header seat " + JSON.stringify(want), got);
    }
    for (const k of want) fmt.sub(k).int(x[k], lo, hi);
  }

  async function checkFormat(ctx) {
    const T = ctx.t;
    const v2 = ctx.v2;
    const proto = v2 ? V2 : V1;
    const top = Fmt(null, "transcript");
    if (!v2 && !ctx.allowV1) {
      // §14: v1 is refused unless the user asks for it (a v2 hand re-published as v1 would escape the v2 checks)
      throw new CheckFailure(
        "format",
        "a rummy-pf/v1 transcript is refused unless you accept v1 (the box \"accept rummy-pf/v1\"; rummy-verify --allow-v1): the server alone vouches for its moves",
        null,
        V2,
        V1,
      );
    }
    top.keys(T, ["protocol", "table_id", "hand_no", "log", "head", "server_seed", "deck", "deck_faces", "result", "signature"]);
    top.sub("protocol").eq(T.protocol, proto);
    top.sub("table_id").id(T.table_id);
    top.sub("hand_no").int(T.hand_no, 1, 2147483647);
    top.sub("log").list(T.log);
    top.sub("head").hex(T.head, 32);
    if (T.server_seed !== "") top.sub("server_seed").hex(T.server_seed, 32);
    top.sub("deck").list(T.deck);
    top.sub("deck_faces").list(T.deck_faces);
    if (T.result !== null) top.sub("result").object(T.result);
    top.sub("signature").hex(T.signature, 64);
    const log = T.log;
    if (log.length === 0) top.sub("log").fail("a log starting with the header", log);

    // record order (§11, §13; Appendix C)
    for (let i = 0; i < log.length; i++) {
      const r = log[i];
      const f = Fmt(i, "log[" + i + "]");
      f.object(r);
      const type = r.type;
      if (type === "void") {
        if (i === 0) f.sub("type").fail('"header"', type);
        if (i !== log.length - 1) f.sub("type").fail("a void record only last", type);
        if (!v2 && i !== 3) f.sub("type").fail("a v1 void record only as record 3", type);
      } else if (type !== expectedType(i)) {
        f.sub("type").fail(JSON.stringify(expectedType(i)), type);
      }
      const fields = recordFields(type, v2);
      f.keys(r, fields.required, fields.optional);
      f.sub("i").eq(r.i, i);
      // "t" int[0, 2^53 - 1] wherever it is (§13): required in v2, optional on v1 actions
      if (has(r, "t")) f.sub("t").int(r.t, 0, MAX_SAFE);
      f.sub("h").hex(r.h, 32);
    }
    const last = log[log.length - 1];
    const isVoid = last.type === "void";
    if (!isVoid && log.length < 4) Fmt(log.length - 1, "log").fail("a log that reaches the deal or ends in a void", log.length + " records");

    // header
    const h0 = Fmt(0, "log[0].header");
    const hd = log[0].header;
    h0.keys(
      hd,
      v2
        ? ["protocol", "table_id", "hand_no", "rules", "rules_id", "seats", "dealer", "commit_s", "prev_head", "public_key", "commit_ms", "reveal_ms"]
        : ["protocol", "table_id", "hand_no", "rules", "rules_id", "seats", "dealer", "commit_s", "prev_head", "public_key"],
    );
    h0.sub("protocol").eq(hd.protocol, proto);
    h0.sub("table_id").eq(hd.table_id, T.table_id);
    h0.sub("hand_no").eq(hd.hand_no, T.hand_no);
    const rf = h0.sub("rules");
    const R = hd.rules;
    rf.keys(R, ["commission_bps", "max_missed_turns", "min_players", "point_value", "seats", "turn_seconds"]);
    if (![4, 6, 8].includes(R.seats) || typeof R.seats !== "number") rf.sub("seats").fail("4, 6 or 8", R.seats);
    rf.sub("point_value").int(R.point_value, 1, 7692307692307);
    rf.sub("commission_bps").int(R.commission_bps, 0, 10000);
    rf.sub("turn_seconds").int(R.turn_seconds, 1, 3600);
    rf.sub("max_missed_turns").int(R.max_missed_turns, 1, 100);
    rf.sub("min_players").int(R.min_players, 2, R.seats);
    h0.sub("rules_id").hex(hd.rules_id, 32);
    const rid = await F.rulesId(R);
    if (hd.rules_id !== rid) h0.sub("rules_id").fail(rid + " (the rules id of §4)", hd.rules_id);
    const sf = h0.sub("seats");
    sf.list(hd.seats);
    // rules.min_players to rules.seats seats (§13, RULES.md D2; the lower bound was 2 until 2026-12-07)
    if (hd.seats.length < R.min_players || hd.seats.length > R.seats) sf.fail(R.min_players + " to " + R.seats + " seats", hd.seats.length + " seats");
    const ids = new Set();
    const keys = new Map();
    let prevSeat = -1;
    hd.seats.forEach((s, k) => {
      const f = sf.at(k);
      f.keys(s, v2 ? ["seat", "player_id", "player_key"] : ["seat", "player_id"]);
      f.sub("seat").int(s.seat, 0, R.seats - 1);
      if (s.seat <= prevSeat) f.sub("seat").fail("seats in strictly ascending order", s.seat);
      prevSeat = s.seat;
      f.sub("player_id").id(s.player_id);
      if (ids.has(s.player_id)) f.sub("player_id").fail("distinct player ids", s.player_id);
      ids.add(s.player_id);
      if (v2) {
        // one key, one seat (§13); each a strict key (§9)
        f.sub("player_key").strictKey(s.player_key, "seat " + s.seat + "'s player_key");
        if (keys.has(s.player_key)) {
          f.sub("player_key").fail("distinct player keys (one key, one seat): seat " + keys.get(s.player_key) + " has this key too", s.player_key);
        }
        keys.set(s.player_key, s.seat);
      }
    });
    const seats = hd.seats.map((s) => s.seat);
    if (!seats.includes(hd.dealer) || typeof hd.dealer !== "number") h0.sub("dealer").fail("one of the seats " + JSON.stringify(seats), hd.dealer);
    h0.sub("commit_s").hex(hd.commit_s, 32);
    h0.sub("prev_head").hex(hd.prev_head, 32);
    h0.sub("public_key").strictKey(hd.public_key, "the server's public_key");
    if (v2) {
      // int[2 000, 3 600 000] (§13, RULES.md D21; the lower bound was 1 until 2026-12-07)
      h0.sub("commit_ms").int(hd.commit_ms, 2000, 3600000);
      h0.sub("reveal_ms").int(hd.reveal_ms, 2000, 3600000);
    }
    Fmt(0, "log[0].sig").hex(log[0].sig, 64);

    // the other records
    for (let i = 1; i < log.length; i++) {
      const r = log[i];
      const f = Fmt(i, "log[" + i + "]");
      if (r.type === "commitments") {
        f.sub("sig").hex(r.sig, 64);
        const cf = f.sub("commitments");
        const co = r.commitments;
        cf.keys(co, ["table_id", "hand_no", "commits"]);
        cf.sub("table_id").eq(co.table_id, T.table_id);
        cf.sub("hand_no").eq(co.hand_no, T.hand_no);
        const lf = cf.sub("commits");
        lf.list(co.commits);
        if (co.commits.length !== seats.length) lf.fail("one entry per header seat (" + seats.length + ")", co.commits.length);
        co.commits.forEach((c, k) => {
          const ef = lf.at(k);
          ef.keys(c, v2 ? ["seat", "commit", "psig"] : ["seat", "commit"]);
          ef.sub("seat").eq(c.seat, seats[k]);
          if (c.commit !== null) ef.sub("commit").hex(c.commit, 32);
          if (v2) {
            if (c.commit === null && c.psig !== null) ef.sub("psig").fail("null (no commit)", c.psig);
            if (c.commit !== null) ef.sub("psig").hex(c.psig, 64);
          }
        });
      } else if (r.type === "reveals") {
        const lf = f.sub("reveals");
        lf.list(r.reveals);
        if (r.reveals.length !== seats.length) lf.fail("one entry per header seat (" + seats.length + ")", r.reveals.length);
        r.reveals.forEach((e, k) => {
          const ef = lf.at(k);
          ef.keys(e, v2 ? ["seat", "seed", "status", "psig"] : ["seat", "seed", "status"]);
          ef.sub("seat").eq(e.seat, seats[k]);
          if (!["revealed", "no_commit", "withheld"].includes(e.status)) ef.sub("status").fail("revealed, no_commit or withheld", e.status);
          if (e.status === "revealed") {
            if (v2) ef.sub("seed").hex(e.seed, 32);
            else if (!B.isHex(e.seed)) ef.sub("seed").fail("a hex seed", e.seed);
            if (v2) ef.sub("psig").hex(e.psig, 64);
          } else {
            ef.sub("seed").eq(e.seed, "");
            if (v2) ef.sub("psig").eq(e.psig, null);
          }
        });
      } else if (r.type === "deal" || r.type === "action") {
        const lf = f.sub("events");
        lf.list(r.events);
        r.events.forEach((e, k) => {
          const ef = lf.at(k);
          ef.keys(e, ["kind", "seat", "data", "private"]);
          if (typeof e.kind !== "string") ef.sub("kind").fail("a string", e.kind);
          if (e.seat !== null && !isInt(e.seat, -MAX_SAFE, MAX_SAFE)) ef.sub("seat").fail("an integer or null", e.seat);
          ef.sub("data").object(e.data);
          ef.sub("private").object(e.private);
        });
        if (r.type === "action") {
          const af = f.sub("action");
          const a = r.action;
          af.object(a);
          if (!ACTION_KINDS.includes(a.kind)) af.sub("kind").fail("one of " + ACTION_KINDS.join(", "), a.kind);
          if (a.kind === "discard") af.keys(a, ["kind", "seat", "card"]);
          else if (a.kind === "declare") af.keys(a, ["kind", "seat", "card"], ["hint"]);
          else af.keys(a, ["kind", "seat"]);
          if (!seats.includes(a.seat) || typeof a.seat !== "number") af.sub("seat").fail("a seat of the header", a.seat);
          if (has(a, "card")) af.sub("card").int(a.card, -MAX_SAFE, MAX_SAFE);
          if (has(a, "hint")) {
            const hf = af.sub("hint");
            hf.list(a.hint);
            a.hint.forEach((g, k) => {
              hf.at(k).list(g);
              g.forEach((x, j) => hf.at(k).at(j).int(x, -MAX_SAFE, MAX_SAFE));
            });
          }
          if (v2 && r.psig !== null) {
            const pf = f.sub("psig");
            pf.keys(r.psig, ["prev", "sig"]);
            pf.sub("prev").hex(r.psig.prev, 32);
            pf.sub("sig").hex(r.psig.sig, 64);
          }
        }
      } else if (r.type === "void") {
        f.sub("reason").text(r.reason);
      }
    }

    // result
    const hasResult = T.result !== null;
    if (hasResult) {
      const rf2 = Fmt(null, "result");
      const res = T.result;
      rf2.keys(res, ["winner", "reason", "points", "settlement"]);
      if (!seats.includes(res.winner) || typeof res.winner !== "number") rf2.sub("winner").fail("a seat of the header", res.winner);
      if (!["declare", "last_standing"].includes(res.reason)) rf2.sub("reason").fail('"declare" or "last_standing"', res.reason);
      seatMap(rf2.sub("points"), res.points, seats, 0, 130);
      const st = res.settlement;
      const sf2 = rf2.sub("settlement");
      sf2.keys(st, ["winner", "point_value", "commission_bps", "points", "pot", "commission", "deltas"]);
      if (!seats.includes(st.winner) || typeof st.winner !== "number") sf2.sub("winner").fail("a seat of the header", st.winner);
      sf2.sub("point_value").int(st.point_value, 0, MAX_SAFE);
      sf2.sub("commission_bps").int(st.commission_bps, 0, MAX_SAFE);
      seatMap(sf2.sub("points"), st.points, seats, 0, 130);
      sf2.sub("pot").int(st.pot, 0, MAX_SAFE);
      sf2.sub("commission").int(st.commission, 0, MAX_SAFE);
      seatMap(sf2.sub("deltas"), st.deltas, seats, -MAX_SAFE, MAX_SAFE);
    }
    // §12: result null exactly when void; an empty seed only in a void transcript
    if (hasResult === isVoid) {
      Fmt(null, "result").fail(isVoid ? "null (the hand is void)" : "an object (the hand is not void)", T.result);
    }
    if (T.server_seed === "" && !isVoid) Fmt(null, "server_seed").fail("hex(32) (an empty seed only in a void hand)", "");
    // once the reveals are recorded the server has known the deck: it publishes the seed, void or not
    const hasReveals = log.length > 2 && log[2].type === "reveals";
    if (T.server_seed === "" && hasReveals) {
      Fmt(null, "server_seed").fail("hex(32) (a transcript whose log has the reveals, record 2, publishes the server seed, void or not: §12)", "");
    }

    // deck
    const decks = cards.decksFor(R.seats);
    const pack = cards.packSize(decks);
    const df = Fmt(null, "deck");
    if (T.deck.length !== 0) {
      if (T.deck.length !== pack) df.fail("[] or a permutation of the " + pack + "-card pack", T.deck.length + " cards");
      const seen = new Uint8Array(pack);
      T.deck.forEach((c, k) => {
        if (!isInt(c, 0, pack - 1) || seen[c]) df.at(k).fail("a card id of the pack, each once", c);
        seen[c] = 1;
      });
    }
    const ff = Fmt(null, "deck_faces");
    if (T.deck_faces.length !== T.deck.length) ff.fail(T.deck.length + " faces, one per deck entry", T.deck_faces.length);
    T.deck_faces.forEach((x, k) => {
      const want = cards.face(T.deck[k], decks);
      if (x !== want) ff.at(k).fail(JSON.stringify(want), x);
    });

    // what the later checks use
    ctx.header = hd;
    ctx.rules = R;
    ctx.seats = seats;
    ctx.decks = decks;
    ctx.pack = pack;
    ctx.isVoid = isVoid;
    ctx.voidReason = isVoid ? last.reason : null;
    ctx.rec = (type) => {
      const i = { commitments: 1, reveals: 2, deal: 3 }[type];
      return log.length > i && log[i].type === type ? log[i] : null;
    };
    return true;
  }
  RummyPF.verify.register("format", checkFormat);
})(typeof window !== "undefined" ? window : globalThis);

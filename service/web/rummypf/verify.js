/* rummy-pf browser verifier: the checks of docs/fairness.md §14, in order, for
   rummy-pf/v2 and rummy-pf/v1 (Appendix C), and the evidence of §15. */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});
  const B = RummyPF.bytes;
  const C = RummyPF.crypto;
  const U = RummyPF.util;
  const F = RummyPF.fairness;
  const cards = RummyPF.cards;
  const groups = RummyPF.groups;
  const arrange = RummyPF.arrange;
  const { Hand, Illegal, settle } = RummyPF.hand;
  const { show, has, isPlainObject, jsonEqual } = U;

  const V1 = "rummy-pf/v1";
  const V2 = "rummy-pf/v2";
  const MAX_SAFE = 9007199254740991;
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
  const CHECKS_V1 = CHECKS_V2.filter((c) => !["player_signatures", "time", "evidence"].includes(c));
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

  // ---------------------------------------------------------------- format (§13)

  const ID_RE = /^[A-Za-z0-9_.:-]{1,64}$/;

  function isInt(x, lo, hi) {
    return typeof x === "number" && Number.isInteger(x) && x >= lo && x <= hi;
  }
  function isId(x) {
    return typeof x === "string" && ID_RE.test(x);
  }
  function isText(x) {
    if (typeof x !== "string") return false;
    const n = Array.from(x).length;
    return n >= 1 && n <= 500;
  }

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
    };
  }

  function recordFields(type, v2) {
    // required fields of each record type (§11, §13; Appendix C for v1)
    const base = ["i", "h", "type"];
    const t = v2 || type === "action" ? ["t"] : [];
    switch (type) {
      case "header":
        return base.concat(t, ["header", "sig"]);
      case "commitments":
        return base.concat(t, ["commitments", "sig"]);
      case "reveals":
        return base.concat(t, ["reveals"]);
      case "deal":
        return base.concat(t, ["events"]);
      case "action":
        return base.concat(t, v2 ? ["action", "psig", "events"] : ["action", "events"]);
      case "void":
        return base.concat(t, ["reason"]);
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
      f.keys(r, recordFields(type, v2));
      f.sub("i").eq(r.i, i);
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
    if (hd.seats.length < 2 || hd.seats.length > R.seats) sf.fail("2 to " + R.seats + " seats", hd.seats.length + " seats");
    const ids = new Set();
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
      if (v2) f.sub("player_key").hex(s.player_key, 32);
    });
    const seats = hd.seats.map((s) => s.seat);
    if (!seats.includes(hd.dealer) || typeof hd.dealer !== "number") h0.sub("dealer").fail("one of the seats " + JSON.stringify(seats), hd.dealer);
    h0.sub("commit_s").hex(hd.commit_s, 32);
    h0.sub("prev_head").hex(hd.prev_head, 32);
    h0.sub("public_key").hex(hd.public_key, 32);
    if (v2) {
      h0.sub("commit_ms").int(hd.commit_ms, 1, 3600000);
      h0.sub("reveal_ms").int(hd.reveal_ms, 1, 3600000);
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

  // ---------------------------------------------------------------- signatures

  function sigMessage(ctx, purpose, obj) {
    return B.concat(B.LP((ctx.v2 ? "rummy-pf/v2/" : "rummy-pf/v1/") + purpose), RummyPF.canonicalBytes(obj));
  }

  async function verifySig(ctx, keyHex, purpose, obj, sigHex) {
    return C.ed25519Verify(B.hexToBytes(keyHex), B.hexToBytes(sigHex), sigMessage(ctx, purpose, obj));
  }

  async function checkSignature(ctx) {
    const T = ctx.t;
    const pub = ctx.header.public_key;
    if (ctx.key !== null && ctx.key !== pub) {
      throw new CheckFailure("signature", "the header's public key is not the pinned key", 0, ctx.key, pub);
    }
    if (!(await verifySig(ctx, pub, "transcript", U.without(T, "signature"), T.signature))) {
      throw new CheckFailure("signature", "the transcript signature does not verify", null, "a valid signature by " + pub, T.signature);
    }
    if (!(await verifySig(ctx, pub, "header", ctx.header, T.log[0].sig))) {
      throw new CheckFailure("signature", "the header signature does not verify", 0, "a valid signature by " + pub, T.log[0].sig);
    }
    const r1 = ctx.rec("commitments");
    if (r1 && !(await verifySig(ctx, pub, "commitments", r1.commitments, r1.sig))) {
      throw new CheckFailure("signature", "the commitments signature does not verify", 1, "a valid signature by " + pub, r1.sig);
    }
    return true;
  }

  function playerKey(ctx, seat) {
    return ctx.header.seats.find((s) => s.seat === seat).player_key;
  }

  async function verifyMove(ctx, seat, prev, move, sigHex) {
    const body = { table_id: ctx.t.table_id, hand_no: ctx.t.hand_no, prev, move };
    return verifySig(ctx, playerKey(ctx, seat), "move", body, sigHex);
  }

  async function checkPlayerSignatures(ctx) {
    const log = ctx.t.log;
    const r1 = ctx.rec("commitments");
    if (!r1) return new Skip("the log ends before the commitments");
    for (const c of r1.commitments.commits) {
      if (c.commit === null) continue;
      const move = { kind: "commit", seat: c.seat, commit: c.commit };
      if (!(await verifyMove(ctx, c.seat, log[0].h, move, c.psig))) {
        throw new CheckFailure("player_signatures", "seat " + c.seat + "'s commit is not signed by its player key", 1, "a move signature by " + playerKey(ctx, c.seat), c.psig);
      }
    }
    const r2 = ctx.rec("reveals");
    if (r2) {
      for (const e of r2.reveals) {
        if (e.status !== "revealed") continue;
        const move = { kind: "reveal", seat: e.seat, seed: e.seed };
        if (!(await verifyMove(ctx, e.seat, log[1].h, move, e.psig))) {
          throw new CheckFailure("player_signatures", "seat " + e.seat + "'s reveal is not signed by its player key", 2, "a move signature by " + playerKey(ctx, e.seat), e.psig);
        }
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
      const prev = r.psig.prev;
      if (a.kind === "leave") {
        let ok = false;
        for (let j = 0; j < i; j++) if (log[j].h === prev) ok = true;
        if (!ok) throw new CheckFailure("player_signatures", "the leave's prev is not the h of an earlier record", i, "the h of a record before " + i, prev);
      } else if (prev !== log[i - 1].h) {
        throw new CheckFailure("player_signatures", "the move's prev is not the h of the record before it", i, log[i - 1].h, prev);
      }
      if (!(await verifyMove(ctx, a.seat, prev, a, r.psig.sig))) {
        throw new CheckFailure("player_signatures", "the " + a.kind + " is not signed by seat " + a.seat + "'s player key", i, "a move signature by " + playerKey(ctx, a.seat), r.psig.sig);
      }
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

  // ---------------------------------------------------------------- chain and evidence

  async function checkChain(ctx) {
    const T = ctx.t;
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

  async function checkEvidence(ctx) {
    if (ctx.evidence === null) return new Skip("no evidence file was given");
    if (!ctx.v2) return new Skip("rummy-pf/v1 has no receipts or heads");
    const T = ctx.t;
    const log = T.log;
    const pub = ctx.header.public_key;
    let used = 0;
    let ignored = 0;
    if (!Array.isArray(ctx.evidence)) {
      throw new CheckFailure("evidence", "an evidence file is a JSON array of receipts and heads (§15)", null, "an array", show(ctx.evidence, 120));
    }
    for (let k = 0; k < ctx.evidence.length; k++) {
      const item = ctx.evidence[k];
      const fail = (msg, expected, found) => {
        const f = new CheckFailure("evidence", "evidence item " + k + ": " + msg, null, expected, found);
        f.item = k;
        throw f;
      };
      if (!isPlainObject(item) || !jsonEqual(Object.keys(item).sort(), ["body", "purpose", "sig"])) fail("not {purpose, body, sig}", "{purpose, body, sig}", show(item));
      const body = item.body;
      if (!["receipt", "head"].includes(item.purpose)) fail("purpose is neither receipt nor head", "receipt or head", show(item.purpose));
      if (!isPlainObject(body)) fail("the body is not an object", "an object", show(body));
      if (!B.isHex(item.sig, 64)) fail("the signature is not hex(64)", "hex(64)", show(item.sig));
      if (body.table_id !== T.table_id || body.hand_no !== T.hand_no) {
        ignored++;
        continue;
      }
      used++;
      const msg = B.concat(B.LP("rummy-pf/v2/" + item.purpose), RummyPF.canonicalBytes(body));
      if (!(await C.ed25519Verify(B.hexToBytes(pub), B.hexToBytes(item.sig), msg))) {
        fail("not signed by the header's public key", "a valid " + item.purpose + " signature by " + pub, item.sig);
      }
      if (item.purpose === "receipt") {
        if (!jsonEqual(Object.keys(body).sort(), ["hand_no", "kind", "prev", "seat", "table_id", "value"])) {
          fail("a receipt body is {table_id, hand_no, seat, kind, value, prev}", "those fields", show(Object.keys(body).sort()));
        }
        const k2 = ctx.seats.indexOf(body.seat);
        if (body.kind === "commit") {
          const r1 = ctx.rec("commitments");
          const c = r1 && k2 >= 0 ? r1.commitments.commits[k2].commit : undefined;
          if (c !== body.value) fail("the server accepted seat " + body.seat + "'s commitment, but record 1 shows another", show(body.value), show(c === undefined ? "(no record 1 entry)" : c));
          if (log[0].h !== body.prev) fail("the commit receipt's prev is not the header's h", log[0].h, show(body.prev));
        } else if (body.kind === "reveal") {
          const r2 = ctx.rec("reveals");
          const e = r2 && k2 >= 0 ? r2.reveals[k2] : undefined;
          if (!e || e.status !== "revealed" || e.seed !== body.value) {
            fail("the server accepted seat " + body.seat + "'s seed, but record 2 does not show it revealed", show({ status: "revealed", seed: body.value }), show(e ? { status: e.status, seed: e.seed } : "(no record 2 entry)"));
          }
          if (!log[1] || log[1].h !== body.prev) fail("the reveal receipt's prev is not the commitments' h", log[1] ? log[1].h : null, show(body.prev));
        } else {
          fail("a receipt's kind is commit or reveal", "commit or reveal", show(body.kind));
        }
      } else {
        if (!jsonEqual(Object.keys(body).sort(), ["h", "hand_no", "i", "table_id"])) {
          fail("a head body is {table_id, hand_no, i, h}", "those fields", show(Object.keys(body).sort()));
        }
        const r = isInt(body.i, 0, MAX_SAFE) ? log[body.i] : undefined;
        if (!r || r.h !== body.h) fail("the signed head of record " + show(body.i) + " is not that record's h", r ? r.h : "(no such record)", show(body.h));
      }
    }
    ctx.evidenceCount = { used, ignored };
    return true;
  }

  // ---------------------------------------------------------------- the verdict

  const RUN = {
    format: checkFormat,
    signature: checkSignature,
    player_signatures: checkPlayerSignatures,
    server_commit: checkServerCommit,
    player_seeds: checkPlayerSeeds,
    deck: checkDeck,
    deal: checkDeal,
    replay: checkReplay,
    time: checkTime,
    points: checkPoints,
    penalties: checkPenalties,
    settlement: checkSettlement,
    chain: checkChain,
    evidence: checkEvidence,
  };

  function warningsOf(ctx) {
    const out = [];
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
    const keyHex = ctx.key || (ctx.header ? ctx.header.public_key : null);
    s.key_pinned = ctx.key !== null;
    s.key = keyHex;
    s.key_fingerprint = keyHex && B.isHex(keyHex, 32) ? await C.sha256Hex(B.hexToBytes(keyHex)) : null;
    if (ctx.hand) {
      const h = ctx.hand;
      s.wild_indicator = h.indicator;
      s.wild_rank = h.wildRank === null ? null : cards.RANKS[h.wildRank];
      if (h.endInfo) s.counted = h.endInfo.counted;
      if (h.result) s.expected_result = h.result;
    }
    if (ctx.evidenceCount) s.evidence = ctx.evidenceCount;
    out.summary = s;
  }

  /** Verify a transcript. input: its JSON text (or bytes); opts: {key: 64 hex digits, evidence: JSON text}. */
  async function verifyTranscript(input, opts) {
    opts = opts || {};
    const out = { ok: false, failure: null, checks_passed: [], checks_skipped: [], skip_reasons: {}, warnings: [], summary: {}, replay: [] };
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
    const ctx = { t: doc, v2: doc.protocol !== V1, key, evidence, steps: [], expected: {}, hand: null, header: null, rec: () => null };
    const names = ctx.v2 ? CHECKS_V2 : CHECKS_V1.concat(evidence !== null ? ["evidence"] : []);
    out.checks = names.slice();
    for (const name of names) {
      let res;
      try {
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
    CHECKS_V1,
    CHECKS_V2,
    describeEvent,
    pretty,
    settle,
  };
  RummyPF.verifyTranscript = verifyTranscript;
  RummyPF.score = score;
})(typeof window !== "undefined" ? window : globalThis);

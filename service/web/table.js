/* The lobby and table client (served at /).  It signs in with a player token, keeps
   the player's own Ed25519 key, lists the tables, sits, commits and reveals the
   player's seed by itself, shows the hand from the player's seat, signs every move,
   keeps every receipt and signed head as evidence, reconnects by itself, and shows
   each hand's result with a link to /verify.  docs/api.md is the protocol it talks;
   docs/fairness.md §5, §9 and §15 what it signs and keeps. */
(function () {
  "use strict";
  const R = window.RummyPF;
  const C = window.RummyClient;
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------ small helpers

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
        else if (v === true) e.setAttribute(k, "");
        else e.setAttribute(k, v);
      }
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  /** node.replaceChildren, leaving out null, undefined and false. */
  function fill(node, ...kids) {
    node.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
  }

  const fmt = new Intl.NumberFormat("en-US");
  const ht = (n) => fmt.format(n) + " HT";
  const signed = (n) => (n > 0 ? "+" : n < 0 ? "\u2212" : "") + fmt.format(Math.abs(n));
  const pct = (bps) => (bps / 100).toLocaleString("en-US", { maximumFractionDigits: 2 }) + "%";
  const plural = (n, one, many) => n + " " + (n === 1 ? one : many || one + "s");

  function parseTime(iso) {
    if (!iso) return null;
    const t = Date.parse(iso);
    return Number.isFinite(t) ? t : null;
  }

  // ------------------------------------------------------------------ cards

  const SUIT_NAME = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
  const RANK_NAME = { A: "ace", T: "10", J: "jack", Q: "queen", K: "king" };

  function cardInfo(id, decks, wildRank) {
    const d = R.cards.describe(id, decks);
    const face = R.cards.face(id, decks);
    const wild = R.cards.isWild(d, wildRank === undefined ? null : wildRank);
    if (d.joker) return { id, d, face, joker: true, rank: "JK", suit: "\u2605", red: false, wild: true, name: "printed joker" };
    const rank = face[0] === "T" ? "10" : face[0];
    return {
      id,
      d,
      face,
      joker: false,
      rank,
      suit: R.cards.SUIT_SYMBOLS[face[1]],
      red: face[1] === "H" || face[1] === "D",
      wild,
      name: (RANK_NAME[face[0]] || face[0]) + " of " + SUIT_NAME[face[1]] + (wild ? ", wild" : ""),
    };
  }

  /** "7♥", "10♠", "joker". */
  function short(id, decks) {
    const c = cardInfo(id, decks, null);
    return c.joker ? "joker" : c.rank + c.suit;
  }

  function cardFace(c, extra) {
    return [
      el("span", { class: "c-rank" }, c.rank),
      el("span", { class: "c-suit" }, c.suit),
      el("span", { class: "c-pip", "aria-hidden": "true" }, c.joker ? "\u2605" : c.suit),
      extra || null,
    ];
  }

  function cardClass(c, size) {
    return "card " + (c.joker ? "joker" : c.red ? "red" : "black") + (c.wild ? " wild" : "") + (size ? " " + size : "");
  }

  /** A card to look at (not a control). */
  function cardView(id, decks, wildRank, size) {
    const c = cardInfo(id, decks, wildRank);
    return el("span", { class: cardClass(c, size), title: c.name, "data-card": id, "data-face": c.face, role: "img", "aria-label": c.name }, cardFace(c));
  }

  function cardsView(ids, decks, wildRank, size) {
    return el("span", { class: "cards" }, ids.map((id) => cardView(id, decks, wildRank, size)));
  }

  /** Cards sorted for display: wild cards first, then by suit and rank. */
  function sortKey(decks, wildRank) {
    return (id) => {
      const d = R.cards.describe(id, decks);
      const wild = R.cards.isWild(d, wildRank);
      return (wild ? 0 : 1 + d.suit) * 100 + (d.joker ? 99 : d.rank === 0 ? 13 : d.rank);
    };
  }

  function sortedIds(ids, decks, wildRank) {
    const k = sortKey(decks, wildRank);
    return ids.slice().sort((a, b) => k(a) - k(b) || a - b);
  }

  /** A group's cards in the order a person lays them: a sequence by rank (ace low or
      high, whichever fits) with its wild cards in the gaps, a set by suit. */
  function orderGroup(ids, decks, wildRank) {
    const cards = ids.map((id) => ({ id, d: R.cards.describe(id, decks) }));
    const kind = ids.length >= 3 ? R.groups.classify(cards.map((c) => c.d), wildRank) : null;
    const wild = (c) => kind !== "pure" && R.cards.isWild(c.d, wildRank);
    const nat = cards.filter((c) => !wild(c));
    const wilds = cards.filter(wild).map((c) => c.id);
    if (kind === "set" || kind === null || !nat.length) {
      nat.sort((a, b) => a.d.suit - b.d.suit || a.d.rank - b.d.rank || a.id - b.id);
      return nat.map((c) => c.id).concat(wilds);
    }
    const pos = (c, high) => (c.d.rank === 0 ? (high ? 14 : 1) : c.d.rank + 1);
    const span = (high) => {
      const ps = nat.map((c) => pos(c, high));
      return Math.max(...ps) - Math.min(...ps) + 1;
    };
    const high = span(false) > ids.length;
    nat.sort((a, b) => pos(a, high) - pos(b, high) || a.id - b.id);
    const out = [];
    let p = pos(nat[0], high);
    for (const c of nat) {
      while (p < pos(c, high) && wilds.length) {
        out.push(wilds.shift());
        p++;
      }
      out.push(c.id);
      p = pos(c, high) + 1;
    }
    while (wilds.length && p <= 14) {
      out.push(wilds.shift());
      p++;
    }
    return wilds.concat(out);
  }

  // ------------------------------------------------------------------ state

  const S = {
    token: null,
    me: null, // GET /api/me
    key: null, // {privateKey, pub, fingerprint, where}
    serverKey: null, // the server key this browser pinned (hex)
    servedKey: null, // the key the server publishes now
    names: new Map(), // player id -> name
    tables: [],
    lobbyTimer: null,
    t: null, // the table being shown
    pendingSit: null, // {tableId, seat} to sit once joined
    skew: 0, // the server's clock minus this browser's (ms), from hello
  };

  function newTable(id) {
    return {
      id,
      sock: null,
      rules: null,
      seats: {},
      paused: false,
      conn: "connecting",
      hand: null,
      log: [],
      busy: false,
      selected: null,
      confirm: null,
      results: null, // {push, transcript, hand_no, hand_id, error} of the last hand
      resultsOpen: false,
      everConnected: false,
    };
  }

  function newHand(handNo, handId) {
    return {
      hand_no: handNo,
      hand_id: handId,
      phase: null,
      seat: null,
      keyOk: null,
      header: null,
      commitments: null,
      records: new Map(),
      newest: -1,
      view: null,
      deadline: null,
      committed: false,
      revealed: false,
      working: false,
      ended: false,
      picks: {},
      arr: null,
      fresh: new Set(),
      badSig: null,
      suggestion: null,
    };
  }

  const decksOf = (t) => R.cards.decksFor(t && t.rules ? t.rules.seats : 6);

  function nameOf(playerId) {
    if (!playerId) return "—";
    if (S.me && playerId === S.me.id) return "You";
    return S.names.get(playerId) || playerId;
  }

  function seatName(seat) {
    const t = S.t;
    if (!t) return "seat " + seat;
    let pid = t.seats[String(seat)];
    const hand = t.hand;
    if (hand && hand.header) {
      const e = hand.header.header.seats.find((s) => s.seat === seat);
      if (e) pid = e.player_id;
    }
    return pid ? nameOf(pid) : "seat " + seat;
  }

  // ------------------------------------------------------------------ messages to the person

  let alertTimer = null;
  function showError(err, context) {
    const x = C.explain(err);
    $("alert-text").textContent = (context ? context + ": " : "") + x.text;
    $("alert-detail").textContent = x.detail;
    $("alert").hidden = false;
    $("alert").dataset.code = err && err.code ? err.code : "page";
    clearTimeout(alertTimer);
    alertTimer = setTimeout(hideError, 15000);
  }

  function hideError() {
    $("alert").hidden = true;
  }

  let noticeTimer = null;
  function notice(text, ms) {
    const n = $("notice");
    n.textContent = text;
    n.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => (n.hidden = true), ms || 6000);
  }

  function banner(kind, text, button) {
    const b = $("banner");
    if (!kind) {
      b.hidden = true;
      fill(b);
      b.dataset.kind = "";
      return;
    }
    b.className = "banner " + kind;
    b.dataset.kind = kind;
    fill(b, el("span", null, text), button || null);
    b.hidden = false;
  }

  function logLine(text, kind) {
    const t = S.t;
    if (!t) return;
    t.log.push({ text, kind: kind || "", at: Date.now() });
    if (t.log.length > 200) t.log.splice(0, t.log.length - 200);
    renderLog();
  }

  // ------------------------------------------------------------------ views and routing

  function showView(name) {
    for (const v of ["signin", "lobby", "table"]) $(v + "-view").hidden = v !== name;
    document.body.dataset.view = name;
    if (name !== "lobby") {
      clearInterval(S.lobbyTimer);
      S.lobbyTimer = null;
    }
  }

  function route() {
    if (!S.me) {
      leaveTablePage();
      showView("signin");
      $("where").textContent = "";
      return;
    }
    const m = /^#\/table\/([A-Za-z0-9_.:-]{1,64})$/.exec(location.hash);
    if (m) openTable(m[1]);
    else openLobby();
  }

  // ------------------------------------------------------------------ signing in

  async function signIn(token, quiet) {
    let me;
    try {
      me = await C.api("GET", "/api/me", { token });
    } catch (e) {
      if (e.code === "unauthorized") C.store.remove("token");
      if (!quiet || e.code !== "unauthorized") showError(e, "Signing in failed");
      S.me = null;
      route();
      return false;
    }
    hideError();
    S.token = token;
    S.me = me;
    S.names.set(me.id, me.name);
    C.store.set("token", token);
    try {
      S.key = await C.playerKey(me.id);
    } catch (e) {
      showError(e, "This browser cannot make an Ed25519 key (WebCrypto)");
      return false;
    }
    if (me.public_key !== S.key.pub) {
      try {
        await C.api("PUT", "/api/me/key", { token, body: { public_key: S.key.pub } });
        notice(me.public_key ? "This browser's signing key is now the one registered for you (it replaces the key of another browser)." : "Your signing key was made in this browser and registered.");
        S.me.public_key = S.key.pub;
      } catch (e) {
        showError(e, "Registering your signing key failed");
      }
    }
    await loadServerKey();
    renderWho();
    route();
    return true;
  }

  async function loadServerKey() {
    try {
      const k = await C.api("GET", "/api/fairness/key");
      S.servedKey = k.public_key_hex;
      const pinned = C.store.get("serverKey");
      if (!pinned) C.store.set("serverKey", k.public_key_hex);
      S.serverKey = pinned || k.public_key_hex;
    } catch (e) {
      S.serverKey = C.store.get("serverKey");
    }
  }

  async function refreshMe() {
    if (!S.token) return;
    try {
      S.me = Object.assign(S.me || {}, await C.api("GET", "/api/me", { token: S.token }));
      renderWho();
    } catch (e) {
      /* the balance shows the last known figures */
    }
  }

  function renderWho() {
    const who = $("who");
    if (!S.me) {
      who.hidden = true;
      return;
    }
    who.hidden = false;
    $("me-name").textContent = S.me.name;
    $("me-balance").replaceChildren(el("span", { class: "label" }, "available "), el("b", { id: "me-available" }, ht(S.me.available)), el("span", { class: "held" }, S.me.held ? " · " + ht(S.me.held) + " held" : ""));
  }

  function signOut() {
    leaveTablePage();
    C.store.remove("token");
    S.token = null;
    S.me = null;
    S.key = null;
    renderWho();
    location.hash = "";
    route();
  }

  async function createPlayer(ev) {
    ev.preventDefault();
    const op = $("op-token").value.trim();
    const name = $("new-name").value.trim();
    const deposit = Number($("new-deposit").value);
    if (!Number.isSafeInteger(deposit) || deposit < 1) {
      showError(new C.ServerError("bad_amount", "the deposit is a whole number of HT, at least 1"));
      return;
    }
    try {
      const p = await C.api("POST", "/api/players", { token: op, body: { name, deposit } });
      const box = $("created");
      box.hidden = false;
      fill(box,
        el("p", null, "Player ", el("b", null, p.name), " created with ", ht(p.available), ". Their token is shown only this once — keep it:"),
        el("code", { id: "created-token", class: "token" }, p.token),
      );
      $("op-token").value = "";
      await signIn(p.token);
    } catch (e) {
      showError(e, "Creating the player failed");
    }
  }

  // ------------------------------------------------------------------ lobby

  function openLobby() {
    leaveTablePage();
    showView("lobby");
    $("where").textContent = "";
    loadLobby();
    clearInterval(S.lobbyTimer);
    S.lobbyTimer = setInterval(loadLobby, 10000);
  }

  async function loadLobby() {
    try {
      const data = await C.api("GET", "/api/tables");
      S.tables = data.tables;
      for (const t of S.tables) for (const s of t.seated) S.names.set(s.player_id, s.name);
      renderLobby();
    } catch (e) {
      showError(e, "Loading the tables failed");
    }
  }

  function mySeatAt(tbl) {
    const s = tbl.seated.find((x) => S.me && x.player_id === S.me.id);
    return s ? s.seat : null;
  }

  function renderLobby() {
    const box = $("tables");
    if (!S.tables.length) {
      fill(box, el("p", { class: "muted" }, "No tables yet. The operator opens tables with POST /api/tables."));
      return;
    }
    const order = S.tables.map((t, k) => ({ t, k })).filter(({ t }) => t.status !== "closed" || mySeatAt(t) !== null);
    order.sort((a, b) => (mySeatAt(b.t) !== null) - (mySeatAt(a.t) !== null) || b.t.seated.length - a.t.seated.length || b.k - a.k);
    fill(box, ...order.map(({ t }) => tableCard(t)));
  }

  function tableCard(tbl) {
    const mine = mySeatAt(tbl);
    const closing = tbl.status === "closing" || tbl.status === "closed";
    const full = tbl.seated.length >= tbl.seats;
    const short = S.me && S.me.available < tbl.hold && mine === null;
    const seatsList = el("ul", { class: "seat-list" });
    for (let s = 0; s < tbl.seats; s++) {
      const who = tbl.seated.find((x) => x.seat === s);
      seatsList.append(
        el(
          "li",
          { class: who ? (mine === s ? "taken me" : "taken") : "free", "data-seat": s },
          el("span", { class: "seat-no" }, String(s)),
          who ? el("span", { class: "seat-who" }, mine === s ? who.name + " (you)" : who.name) : el("span", { class: "seat-who" }, "free"),
        ),
      );
    }
    const go = (sit) => () => {
      if (sit) S.pendingSit = { tableId: tbl.id, seat: null };
      location.hash = "#/table/" + tbl.id;
    };
    let primary;
    if (mine !== null) primary = el("button", { type: "button", class: "primary", on: { click: go(false) } }, "Back to my seat");
    else primary = el("button", { type: "button", class: "primary", disabled: full || short || closing, on: { click: go(true) } }, closing ? "Closing" : full ? "Full" : "Sit");
    return el(
      "article",
      { class: "tcard" + (mine !== null ? " mine" : ""), "data-table": tbl.id, "aria-label": "Table " + tbl.id },
      el("header", null, el("h2", null, "Table ", el("span", { class: "tid" }, tbl.id)), closing ? el("span", { class: "closing" }, tbl.status) : null, el("span", { class: "count" }, tbl.seated.length + " / " + tbl.seats + " seated")),
      el(
        "dl",
        { class: "stakes" },
        el("div", null, el("dt", null, "Point value"), el("dd", { class: "pv" }, ht(tbl.point_value))),
        el("div", null, el("dt", null, "Hold to sit"), el("dd", { class: "hold" }, ht(tbl.hold))),
        el("div", null, el("dt", null, "Commission"), el("dd", { class: "commission" }, pct(tbl.commission_bps))),
        el("div", null, el("dt", null, "Turn"), el("dd", null, tbl.turn_seconds + " s")),
      ),
      seatsList,
      short ? el("p", { class: "short" }, "Sitting needs " + ht(tbl.hold) + " available; you have " + ht(S.me.available) + ".") : null,
      el("div", { class: "tcard-actions" }, primary, el("button", { type: "button", on: { click: go(false) } }, "Watch")),
    );
  }

  // ------------------------------------------------------------------ the table page

  function openTable(id) {
    showView("table");
    if (S.t && S.t.id === id) {
      renderTable();
      return;
    }
    leaveTablePage();
    const t = newTable(id);
    S.t = t;
    $("where").replaceChildren(el("span", { class: "label" }, "Table "), el("b", null, id), " ", el("a", { href: "#/lobby" }, "back to the lobby"));
    t.sock = new C.TableSocket({
      token: S.token,
      tableId: id,
      onSnapshot: (snap, how) => fromSnapshot(snap, how),
      onPush: onPush,
      joinArgs: () => (t.hand && t.hand.newest >= 0 ? { since: { hand_no: t.hand.hand_no, i: t.hand.newest } } : {}),
      onState: onConnState,
    });
    t.sock.connect();
    refreshNames();
    renderTable();
  }

  function leaveTablePage() {
    if (S.t && S.t.sock) S.t.sock.stop();
    S.t = null;
    banner(null);
  }

  async function refreshNames() {
    try {
      const data = await C.api("GET", "/api/tables");
      for (const tb of data.tables) for (const s of tb.seated) S.names.set(s.player_id, s.name);
      if (S.t) renderTable();
    } catch (e) {
      /* names stay as they are */
    }
  }

  function onConnState(state, arg) {
    const t = S.t;
    if (!t) return;
    const was = t.conn;
    t.conn = state;
    if (state === "open") {
      if (t.paused) banner("warn", "The table is paused: it cannot reach its database. No clock runs; it resumes by itself.");
      else banner(null);
      t.everConnected = true;
    } else if (state === "connecting") {
      if (!t.everConnected) banner("info", "Connecting to the table…");
    } else if (state === "lost") {
      const secs = Math.max(1, Math.round(arg / 1000));
      banner("bad", "Connection lost — reconnecting in " + plural(secs, "second") + "… Your seat and your clock stay at the table.", el("button", { type: "button", class: "ghost", on: { click: () => t.sock.reconnectNow() } }, "Reconnect now"));
      if (was === "open") logLine("The connection was lost.", "sys");
    } else if (state === "replaced") {
      banner("bad", "This table was opened in another window or tab; this one has stopped.", el("button", { type: "button", class: "ghost", on: { click: () => t.sock.reconnectNow() } }, "Use it here"));
    } else if (state === "refused") {
      showError(arg, "The table did not take you in");
    } else if (state === "gone") {
      showError(arg, "Opening the table failed");
      location.hash = "#/lobby";
    }
    renderTable();
  }

  // ------------------------------------------------------------------ the snapshot

  async function fromSnapshot(snap, how) {
    const t = S.t;
    if (!t || snap.table_id !== t.id) return;
    const before = t.hand;
    t.snapshot = snap;
    t.rules = snap.rules;
    t.seats = snap.seats;
    t.paused = snap.paused;
    if (snap.paused) banner("warn", "The table is paused: it cannot reach its database. No clock runs; it resumes by itself.");
    const h = snap.hand;
    let missed = null;
    if (h) {
      let hand = before && before.hand_no === h.hand_no ? before : newHand(h.hand_no, h.hand_id);
      const seen = before && before.hand_no === h.hand_no ? before.newest : -1;
      if (seen >= 0) missed = Math.max(0, h.i - seen);
      t.hand = hand;
      hand.hand_id = h.hand_id;
      hand.phase = h.phase;
      hand.header = h.header;
      hand.records.set(0, h.header.h);
      if (h.commitments) {
        hand.commitments = h.commitments;
        hand.records.set(1, h.commitments.h);
      }
      hand.records.set(h.i, h.h);
      hand.newest = Math.max(hand.newest, h.i);
      hand.deadline = parseTime(h.deadline);
      if (h.view) hand.view = h.view;
      learnSeat(hand);
      if (h.seat !== null && h.seat !== undefined) hand.seat = h.seat;
      // what happened while the page was away (or, on a first visit, the hand so far)
      const events = (h.events || []).filter((e) => e.i > seen);
      if (events.length) {
        if (seen >= 0) logLine("While you were away:", "sys");
        hand.fresh = new Set();
        for (const e of events) onEvent(hand, e);
      }
      if (h.committed) hand.committed = true;
      if (h.revealed) hand.revealed = true;
      keep(h.head);
      syncArrangement(hand);
      if (before && before !== hand && !before.ended) fetchEndedHand(before);
      if (h.phase === "commit" && h.committed === false) doCommit(hand);
      else if (h.phase === "reveal" && h.committed && h.revealed === false) doReveal(hand);
    } else {
      if (before && !before.ended) fetchEndedHand(before);
      t.hand = null;
    }
    if (how && (how.reconnected || how.resumed)) {
      let text = how.resumed ? "The table is back" : "Reconnected";
      if (missed !== null) text += " — " + plural(missed, "move") + " happened while you were away";
      else if (before && !h) text += " — the hand ended while you were away";
      else if (h && (!before || before.hand_no !== h.hand_no)) text += " — hand " + h.hand_no + " is being played";
      text += ".";
      notice(text, 8000);
      logLine(text, "sys");
    }
    if (S.pendingSit && S.pendingSit.tableId === t.id) {
      const want = S.pendingSit;
      S.pendingSit = null;
      if (mySeat() === null) sit(want.seat);
    }
    renderTable();
    scheduleSuggestion();
  }

  function mySeat() {
    const t = S.t;
    if (!t || !S.me) return null;
    for (const [s, p] of Object.entries(t.seats)) if (p === S.me.id) return Number(s);
    return null;
  }

  /** From the signed header: do I take part in this hand, at which seat, and is the key it lists for me mine? */
  function learnSeat(hand) {
    if (!hand.header) return;
    const header = hand.header.header;
    const entry = header.seats.find((s) => s.player_id === S.me.id);
    hand.seat = entry ? entry.seat : null;
    hand.keyOk = entry ? entry.player_key === S.key.pub : null;
    hand.listedKey = entry ? entry.player_key : null;
    hand.serverKeyOk = !S.serverKey || header.public_key === S.serverKey;
    if (entry && !hand.keyOk && !hand.keyWarned) {
      hand.keyWarned = true;
      showError(new C.ServerError("key_mismatch", "the header lists key " + entry.player_key.slice(0, 16) + "… for you, this browser holds " + S.key.pub.slice(0, 16) + "…"), "Hand " + hand.hand_no + " does not list your key — the page will not commit a seed or move in it");
      logLine("Warning: hand " + hand.hand_no + "'s signed header lists a key for you that is not this browser's. Nothing was committed. Keep the header: it is signed proof.", "bad");
    }
    for (const s of header.seats) hand.picks[s.seat] = hand.picks[s.seat] || [];
  }

  // ------------------------------------------------------------------ evidence

  function keep(item) {
    if (!item || !S.me) return;
    if (!C.keepEvidence(S.me.id, item)) return;
    const hand = S.t && S.t.hand;
    if (S.serverKey) C.serverSigned(S.serverKey, item).then((ok) => {
      if (!ok && hand) {
        hand.badSig = item.purpose + " " + (item.body.i !== undefined ? "of record " + item.body.i : item.body.kind);
        logLine("Warning: a " + hand.badSig + " from the server does not verify with the server key you pinned.", "bad");
        renderSide();
      }
    });
    renderEvidence();
  }

  function evidenceFor(handNo) {
    const t = S.t;
    return t && S.me ? C.evidenceOf(S.me.id, t.id, handNo) : [];
  }

  function downloadEvidence(handNo) {
    const t = S.t;
    const items = evidenceFor(handNo);
    C.download("evidence-" + t.id + "-hand" + handNo + ".json", JSON.stringify(items, null, 1) + "\n");
  }

  // ------------------------------------------------------------------ pushes

  function onPush(m) {
    const t = S.t;
    if (!t) return;
    switch (m.type) {
      case "hello":
        // the server's clock: deadlines are its times, so the countdown runs on it
        if (parseTime(m.now) !== null) S.skew = parseTime(m.now) - Date.now();
        break;
      case "table":
        if (m.table_id !== t.id) return;
        t.seats = m.seats;
        refreshNames();
        renderTable();
        break;
      case "hand":
        onHandPhase(m);
        break;
      case "update":
        onUpdate(m);
        break;
      case "result":
        onResult(m);
        break;
      case "paused":
        t.paused = true;
        banner("warn", "The table is paused: " + m.message + ". No clock runs; it resumes by itself.");
        logLine("The table paused: " + m.message + ".", "sys");
        renderTable();
        break;
      case "resumed":
        t.paused = false;
        banner(null);
        fromSnapshot(m.snapshot, { resumed: true });
        break;
      case "shutdown":
        banner("warn", "The server is going down for a moment (" + m.message + "); the page reconnects by itself.");
        logLine("The server is restarting.", "sys");
        break;
      case "replaced":
        logLine("Another window took over this table.", "sys");
        break;
      case "error":
        showError(new C.ServerError(m.error.code, m.error.message, m.error.rule));
        break;
    }
  }

  function onHandPhase(m) {
    const t = S.t;
    if (m.table_id !== t.id) return;
    let hand = t.hand;
    if (!hand || hand.hand_no !== m.hand_no) {
      if (hand && !hand.ended) fetchEndedHand(hand);
      hand = newHand(m.hand_no, m.hand_id);
      t.hand = hand;
      t.selected = null;
    }
    hand.hand_id = m.hand_id;
    hand.phase = m.phase;
    hand.deadline = parseTime(m.deadline);
    hand.records.set(m.record.i, m.record.h);
    hand.newest = Math.max(hand.newest, m.record.i);
    keep(m.head);
    if (m.phase === "commit") {
      hand.header = m.record;
      learnSeat(hand);
      const who = hand.header.header.seats.map((s) => seatName(s.seat)).join(", ");
      logLine("Hand " + m.hand_no + " begins with " + who + ". The server committed to its seed" + (hand.seat !== null ? "; your seed goes in next." : "."), "hand");
      if (hand.seat !== null) doCommit(hand);
    } else if (m.phase === "reveal") {
      hand.commitments = m.record;
      if (hand.seat !== null) doReveal(hand);
    }
    renderTable();
  }

  function onUpdate(m) {
    const t = S.t;
    if (m.table_id !== t.id) return;
    let hand = t.hand;
    if (!hand || hand.hand_no !== m.hand_no) {
      hand = newHand(m.hand_no, null);
      t.hand = hand;
    }
    hand.records.set(m.i, m.h);
    hand.newest = Math.max(hand.newest, m.i);
    keep(m.head);
    hand.view = m.view;
    hand.phase = m.view && m.view.phase === "ended" ? "finishing" : "play";
    hand.deadline = parseTime(m.deadline);
    if (m.i === 3 && t.resultsOpen) t.resultsOpen = false; // a new deal: back to the cards
    hand.fresh = new Set();
    for (const e of m.events) onEvent(hand, e);
    syncArrangement(hand);
    if (t.confirm && t.confirm.what !== "leave") t.confirm = null;
    renderTable();
    scheduleSuggestion();
  }

  function pick(hand, seat, kind, card) {
    const list = (hand.picks[seat] = hand.picks[seat] || []);
    list.push({ kind, card });
    if (list.length > 8) list.shift();
  }

  function onEvent(hand, e) {
    const decks = decksOf(S.t);
    const who = e.seat === null ? "" : seatName(e.seat);
    const mine = e.seat !== null && e.seat === hand.seat;
    switch (e.kind) {
      case "deal":
        logLine("Hand " + hand.hand_no + " is dealt. Wild card indicator " + short(e.wild_indicator, decks) + "; the open pile starts with " + short(e.open, decks) + "; " + seatName(e.first) + " plays first.", "hand");
        break;
      case "hand":
        break;
      case "forfeit":
        logLine(who + " withheld the seed and sits this hand out (" + e.points + " points).", "bad");
        break;
      case "turn":
        break;
      case "draw":
        if (e.source === "open") {
          pick(hand, e.seat, "took", e.card);
          logLine(who + (e.by_clock ? " (by the clock)" : "") + " took " + short(e.card, decks) + " from the open pile.");
        } else {
          if (mine && e.card !== undefined) {
            hand.fresh.add(e.card);
            logLine("You drew " + short(e.card, decks) + " from the closed pile" + (e.by_clock ? " (the clock drew for you)" : "") + ".");
          } else logLine(who + (e.by_clock ? " (by the clock)" : "") + " drew from the closed pile.");
        }
        break;
      case "discard":
        pick(hand, e.seat, "threw", e.card);
        logLine(who + (e.by_clock ? " (by the clock)" : "") + " discarded " + short(e.card, decks) + ".");
        break;
      case "clock":
        pick(hand, e.seat, "clock", null);
        logLine("The clock ran out for " + who + " (" + plural(e.missed, "missed turn") + " in a row).", "bad");
        break;
      case "drop":
        pick(hand, e.seat, "dropped", null);
        logLine(who + (e.reason === "clock" ? " was dropped by the clock" : " dropped") + ": " + e.points + " points.", "bad");
        break;
      case "leave":
        pick(hand, e.seat, "left", null);
        logLine(who + " left the table: " + e.points + " points.", "bad");
        break;
      case "reshuffle":
        logLine("The closed pile ran out: the open pile (but its top card) was reshuffled into a new closed pile of " + e.count + " cards.");
        break;
      case "declare":
        if (e.valid) logLine(who + " declared — a valid hand!", "good");
        else logLine(who + " made a wrong declare: " + e.points + " points.", "bad");
        break;
      case "end":
        logLine("The hand ends: " + seatName(e.winner) + " won" + (e.reason === "declare" ? " with a valid declare." : " as the last one standing."), "good");
        break;
      default:
        break;
    }
  }

  async function onResult(m) {
    const t = S.t;
    if (m.table_id !== t.id) return;
    const hand = t.hand && t.hand.hand_no === m.hand_no ? t.hand : null;
    if (hand) hand.ended = true;
    if (m.void) logLine("Hand " + m.hand_no + " was voided: " + m.void_reason + ". Nobody was charged.", "bad");
    C.forgetSeed(S.me.id, t.id, m.hand_no);
    C.store.remove("arr." + S.me.id + "." + t.id + "." + m.hand_no);
    t.results = { push: m, hand_no: m.hand_no, hand_id: m.hand_id, transcript: null, error: null };
    t.resultsOpen = true;
    renderTable();
    await loadTranscript(t.results);
    refreshMe();
  }

  /** A hand that ended while the page was away (no result push came): its transcript. */
  async function fetchEndedHand(hand) {
    const t = S.t;
    hand.ended = true;
    if (!hand.hand_id || !t) return;
    C.forgetSeed(S.me.id, t.id, hand.hand_no);
    const res = { push: null, hand_no: hand.hand_no, hand_id: hand.hand_id, transcript: null, error: null };
    t.results = res;
    t.resultsOpen = true;
    await loadTranscript(res);
    refreshMe();
  }

  async function loadTranscript(res) {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const text = await C.api("GET", "/api/hands/" + res.hand_id + "/transcript", { raw: true });
        res.transcript = JSON.parse(text);
        res.transcriptText = text;
        res.error = null;
        break;
      } catch (e) {
        res.error = e;
        if (e.code !== "hand_in_progress" && e.code !== "network" && e.code !== "unavailable") break;
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
      }
    }
    if (S.t && S.t.results === res) renderTable();
  }

  // ------------------------------------------------------------------ seeds (§5)

  async function doCommit(hand) {
    const t = S.t;
    if (hand.committed || hand.working || hand.seat === null || hand.ended) return;
    if (!hand.keyOk) return; // learnSeat has warned the person
    hand.working = true;
    try {
      const seed = C.seedFor(S.me.id, t.id, hand.hand_no);
      const commit = await R.fairness.playerCommit(hand.seat, seed);
      const move = { kind: "commit", seat: hand.seat, commit };
      const sig = await C.sign(S.key, "move", C.moveBody(t.id, hand.hand_no, hand.header.h, move));
      const res = await t.sock.send("commit", { hand_no: hand.hand_no, commit, sig });
      keep(res.receipt);
      hand.committed = true;
      if (!res.receipt || res.receipt.body.value !== commit) logLine("Warning: the server's receipt does not name your commitment.", "bad");
      logLine("Your seed is committed (the server's signed receipt is kept).", "me");
    } catch (e) {
      if (e.code === "already_committed") hand.committed = true;
      showError(e, "Committing your seed failed");
    } finally {
      hand.working = false;
      renderTable();
    }
  }

  async function doReveal(hand) {
    const t = S.t;
    if (hand.revealed || hand.working || hand.seat === null || !hand.commitments || hand.ended) return;
    if (!hand.keyOk) return;
    const entry = hand.commitments.commitments.commits.find((c) => c.seat === hand.seat);
    if (!entry || !entry.commit) {
      logLine("Your seed was not committed in time: you play this hand with the empty seed (D21).", "bad");
      return;
    }
    const seed = C.knownSeed(S.me.id, t.id, hand.hand_no);
    if (!seed) {
      showError(new C.ServerError("seed_lost", "this browser no longer holds the seed it committed for hand " + hand.hand_no), "Your seed cannot be revealed — you will sit this hand out and pay a first drop (D29)");
      return;
    }
    if ((await R.fairness.playerCommit(hand.seat, seed)) !== entry.commit) {
      showError(new C.ServerError("commit_mismatch", "the signed commitment list shows " + entry.commit.slice(0, 16) + "… for your seat"), "The commitment the server lists for you is not the one this browser made — nothing was revealed. Keep the evidence");
      return;
    }
    hand.working = true;
    try {
      const move = { kind: "reveal", seat: hand.seat, seed };
      const sig = await C.sign(S.key, "move", C.moveBody(t.id, hand.hand_no, hand.commitments.h, move));
      const res = await t.sock.send("reveal", { hand_no: hand.hand_no, seed, sig });
      keep(res.receipt);
      hand.revealed = true;
      logLine("Your seed is revealed (receipt kept). The deck is now fixed by every seed.", "me");
    } catch (e) {
      if (e.code === "already_revealed") hand.revealed = true;
      showError(e, "Revealing your seed failed");
    } finally {
      hand.working = false;
      renderTable();
    }
  }

  // ------------------------------------------------------------------ moves (§9)

  function newestHead(hand) {
    return hand.records.get(hand.newest);
  }

  /** Sign and send an action: {kind} or {kind, card} (a declare also sends the arrangement as its hint). */
  async function act(kind, card) {
    const t = S.t;
    const hand = t && t.hand;
    if (!hand || hand.seat === null || !hand.view) {
      showError(new C.ServerError("not_in_hand", "the page has no hand of yours to move in"));
      return false;
    }
    if (!hand.keyOk) {
      showError(new C.ServerError("key_mismatch", "this hand lists another key for you"), "The page does not move in this hand");
      return false;
    }
    const action = { kind };
    if (card !== undefined && card !== null) action.card = card;
    if (kind === "declare" && hand.arr) {
      const hint = hand.arr.map((g) => g.filter((c) => c !== card)).filter((g) => g.length);
      action.hint = hint;
    }
    t.busy = true;
    t.confirm = null;
    hideError();
    renderActions();
    try {
      for (let attempt = 0; ; attempt++) {
        const prev = newestHead(hand);
        const move = Object.assign({}, action, { seat: hand.seat });
        const sig = await C.sign(S.key, "move", C.moveBody(t.id, hand.hand_no, prev, move));
        try {
          const res = await t.sock.send("action", { hand_no: hand.hand_no, action, prev, sig });
          keep(res.head);
          if (kind === "discard" || kind === "declare" || kind === "drop") t.selected = null;
          return true;
        } catch (e) {
          const v = hand.view;
          const stillMine = v && v.turn === hand.seat && v.phase !== "ended";
          if (e.code === "stale_head" && attempt === 0 && stillMine && newestHead(hand) !== prev) continue; // sign again over the newest record
          showError(e, moveName(kind));
          return false;
        }
      }
    } catch (e) {
      showError(e, moveName(kind));
      return false;
    } finally {
      t.busy = false;
      renderTable();
    }
  }

  function moveName(kind) {
    return { draw_closed: "Drawing", draw_open: "Taking the open card", discard: "Discarding", declare: "Declaring", drop: "Dropping" }[kind] || kind;
  }

  async function sit(seat) {
    const t = S.t;
    try {
      const fields = seat === null || seat === undefined ? {} : { seat };
      const res = await t.sock.send("sit", fields);
      logLine("You sat down at seat " + res.seat + ". " + ht(t.rules ? t.rules.point_value * 130 : 0) + " will be held while each hand is played.", "me");
      refreshMe();
    } catch (e) {
      showError(e, "Sitting down failed");
    }
    renderTable();
  }

  async function leave() {
    const t = S.t;
    const hand = t.hand;
    const fields = {};
    const me = hand && hand.view && hand.view.me;
    const inHand = hand && hand.seat !== null && !hand.ended && (!me || me.status === "playing");
    if (inHand && !hand.keyOk) {
      showError(new C.ServerError("key_mismatch", "this hand lists another key for you"), "The page cannot sign your leave in this hand; you can leave when it is over");
      return;
    }
    if (inHand) {
      const prev = newestHead(hand);
      const move = { kind: "leave", seat: hand.seat };
      fields.hand_no = hand.hand_no;
      fields.prev = prev;
      fields.sig = await C.sign(S.key, "move", C.moveBody(t.id, hand.hand_no, prev, move));
    }
    t.busy = true;
    t.confirm = null;
    renderActions();
    try {
      const res = await t.sock.send("leave", fields);
      logLine("You left seat " + res.left + (res.charged ? " — charged 40 points for leaving during a hand (D15)." : "."), "me");
      notice("You left the table. You are watching now.");
      refreshMe();
    } catch (e) {
      showError(e, "Leaving failed");
    } finally {
      t.busy = false;
      renderTable();
    }
  }

  // ------------------------------------------------------------------ the arrangement

  function arrName(hand) {
    return "arr." + S.me.id + "." + S.t.id + "." + hand.hand_no;
  }

  function wildRankOf(view) {
    return view ? R.cards.wildRankOf(R.cards.describe(view.wild_indicator, decksOf(S.t))) : null;
  }

  /** Groups by suit (wild cards first), for a fresh deal. */
  function bySuit(cards, decks, wildRank) {
    const groups = new Map();
    for (const id of sortedIds(cards, decks, wildRank)) {
      const d = R.cards.describe(id, decks);
      const k = R.cards.isWild(d, wildRank) ? -1 : d.suit;
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(id);
    }
    return [...groups.values()];
  }

  /** Keep the person's groups across updates: cards that left go, new cards join the last group. */
  function syncArrangement(hand) {
    const me = hand.view && hand.view.me;
    if (!me) return;
    const decks = decksOf(S.t);
    if (!hand.arr) {
      const saved = C.store.getJSON(arrName(hand), null);
      hand.arr = Array.isArray(saved) ? saved : bySuit(me.cards, decks, wildRankOf(hand.view));
    }
    const have = new Set(me.cards);
    let arr = hand.arr.map((g) => g.filter((c) => have.has(c)));
    const placed = new Set(arr.flat());
    arr = arr.filter((g) => g.length);
    const fresh = me.cards.filter((c) => !placed.has(c));
    if (fresh.length) {
      for (const c of fresh) hand.fresh.add(c);
      if (arr.length) arr[arr.length - 1].push(...fresh);
      else arr.push(fresh);
    }
    hand.arr = arr;
    C.store.setJSON(arrName(hand), arr);
    if (S.t.selected !== null && !have.has(S.t.selected)) S.t.selected = null;
  }

  function setArrangement(hand, arr) {
    hand.arr = arr.filter((g) => g.length);
    C.store.setJSON(arrName(hand), hand.arr);
    renderHand();
    renderSuggestion();
  }

  function moveCard(hand, card, toGroup, beforeCard) {
    const arr = hand.arr.map((g) => g.filter((c) => c !== card));
    if (toGroup === "new") arr.push([card]);
    else {
      const g = arr[toGroup];
      if (!g) return;
      const at = beforeCard === null || beforeCard === undefined ? -1 : g.indexOf(beforeCard);
      if (at < 0) g.push(card);
      else g.splice(at, 0, card);
    }
    setArrangement(hand, arr);
  }

  /** Shift+arrow: one place left or right, across group boundaries. */
  function nudge(hand, card, dir) {
    const arr = hand.arr.map((g) => g.slice());
    let gi = arr.findIndex((g) => g.includes(card));
    if (gi < 0) return;
    const g = arr[gi];
    const i = g.indexOf(card);
    const j = i + dir;
    if (j >= 0 && j < g.length) {
      g[i] = g[j];
      g[j] = card;
    } else {
      const next = gi + dir;
      if (next < 0 || next >= arr.length) return;
      g.splice(i, 1);
      if (dir < 0) arr[next].push(card);
      else arr[next].unshift(card);
    }
    setArrangement(hand, arr);
    focusCard(card);
  }

  /** The Sort button: the best arrangement RummyPF.score finds, loose cards last. */
  function sortHand() {
    const t = S.t;
    const hand = t && t.hand;
    if (!hand || !hand.view || !hand.view.me) return;
    const decks = decksOf(t);
    const cards = hand.view.me.cards;
    const faces = cards.map((id) => R.cards.face(id, decks));
    const res = R.score(faces, hand.view.wild_face);
    const pool = new Map();
    for (const id of cards) {
      const f = R.cards.face(id, decks);
      if (!pool.has(f)) pool.set(f, []);
      pool.get(f).push(id);
    }
    const take = (f) => pool.get(f).shift();
    const wr = wildRankOf(hand.view);
    const groups = res.groups.map((g) => orderGroup(g.map(take), decks, wr));
    const loose = sortedIds(res.loose.map(take), decks, wr);
    const arr = groups.concat(loose.length ? [loose] : []);
    setArrangement(hand, arr);
  }

  // ------------------------------------------------------------------ suggestions

  let suggestTimer = null;
  function scheduleSuggestion() {
    clearTimeout(suggestTimer);
    suggestTimer = setTimeout(computeSuggestion, 30);
  }

  function countOf(ids, decks, wr) {
    return R.arrange.count(ids.map((id) => R.cards.describe(id, decks)), wr);
  }

  /** The fewest points after one discard (ties: the costlier card, then the higher id), as the bots choose. */
  function bestDiscard(cards, decks, wr) {
    let best = null;
    for (const c of [...new Set(cards)].sort((a, b) => b - a)) {
      const kept = cards.filter((x) => x !== c);
      const r = countOf(kept, decks, wr);
      if (r.valid_declare) return { card: c, points: 0, valid: true };
      const v = R.cards.value(R.cards.describe(c, decks), wr);
      if (best === null || r.points < best.points || (r.points === best.points && v > best.value)) best = { card: c, points: r.points, valid: false, value: v };
    }
    return best;
  }

  /** What a suggestion depends on: one shown for another state is never shown. */
  function suggestionKey(hand) {
    const v = hand && hand.view;
    if (!v || !v.me) return "";
    return hand.hand_no + "|" + v.phase + "|" + v.turn + "|" + v.me.status + "|" + v.me.cards.join(",") + "|" + v.open.slice(-1).join(",");
  }

  function computeSuggestion() {
    const t = S.t;
    const hand = t && t.hand;
    if (!hand || !hand.view || !hand.view.me || hand.view.phase === "ended") {
      if (hand) hand.suggestion = null;
      renderSuggestion();
      return;
    }
    const v = hand.view;
    const me = v.me;
    const decks = decksOf(t);
    const wr = wildRankOf(v);
    const key = suggestionKey(hand);
    if (hand.suggestion && hand.suggestion.key === key) return;
    const s = { key, points: null, move: null, card: null, text: "" };
    if (me.status !== "playing") {
      s.text = "";
    } else if (me.cards.length === 14) {
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
    } else {
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
    }
    hand.suggestion = s;
    renderSuggestion();
  }

  // ------------------------------------------------------------------ rendering: the table

  function renderTable() {
    const t = S.t;
    if (!t) return;
    $("table-title").textContent = "Table " + t.id;
    renderSeats();
    renderPiles();
    renderMine();
    renderResults();
    renderSide();
  }

  function seatEntry(hand, seat) {
    return hand && hand.view ? hand.view.seats.find((s) => s.seat === seat) : null;
  }

  const STATUS = { playing: "playing", declared: "declared", wrong_declare: "wrong declare", dropped: "dropped", left: "left", forfeit: "sat out" };

  function renderSeats() {
    const t = S.t;
    const box = $("seats");
    if (!t.rules) {
      fill(box);
      return;
    }
    const hand = t.hand;
    const decks = decksOf(t);
    const wr = hand ? wildRankOf(hand.view) : null;
    const mine = hand && hand.seat !== null ? hand.seat : mySeat();
    const boxes = [];
    // the other seats, in turn order after mine
    const n = t.rules.seats;
    const start = mine === null ? 0 : mine + 1;
    for (let k = 0; k < n; k++) {
      const seat = (start + k) % n;
      if (seat === mine) continue;
      const pid = t.seats[String(seat)];
      const inHand = hand && hand.header ? hand.header.header.seats.find((s) => s.seat === seat) : null;
      const entry = seatEntry(hand, seat);
      if (!pid && !inHand) {
        if (mine === null && t.conn === "open") {
          boxes.push(el("div", { class: "seat free", "data-seat": seat }, el("div", { class: "seat-name" }, "Seat " + seat), el("button", { type: "button", class: "sit-here", "data-seat": seat, on: { click: () => sit(seat) } }, "Sit here")));
        } else boxes.push(el("div", { class: "seat free", "data-seat": seat }, el("div", { class: "seat-name" }, "Seat " + seat), el("div", { class: "seat-meta" }, "free")));
        continue;
      }
      const playerId = inHand ? inHand.player_id : pid;
      const v = hand && hand.view;
      const onTurn = v && v.phase !== "ended" && v.turn === seat && entry && entry.status === "playing";
      const status = entry ? entry.status : inHand ? (hand.phase === "commit" || hand.phase === "reveal" ? "seeding" : "in hand") : "waiting";
      const count = entry ? entry.card_count : 0;
      const backs = el("div", { class: "fan", "aria-label": plural(count, "card") }, Array.from({ length: Math.min(count, 14) }, () => el("span", { class: "back" })));
      const picks = (hand && hand.picks[seat]) || [];
      const pickList = el(
        "div",
        { class: "picks", "aria-label": "public moves" },
        picks.slice(-5).map((p) =>
          p.card !== null && p.card !== undefined
            ? el("span", { class: "pick " + p.kind, title: p.kind === "took" ? "took from the open pile" : "discarded" }, el("span", { class: "pick-label" }, p.kind === "took" ? "took" : "threw"), cardView(p.card, decks, wr, "tiny"))
            : el("span", { class: "pick " + p.kind }, p.kind === "clock" ? "clock" : p.kind),
        ),
      );
      boxes.push(
        el(
          "div",
          { class: "seat" + (onTurn ? " on-turn" : "") + " st-" + status.replace(/ /g, "-"), "data-seat": seat, "data-status": status },
          el(
            "div",
            { class: "seat-name" },
            el("b", null, nameOf(playerId)),
            v && v.dealer === seat ? el("span", { class: "dealer", title: "dealer" }, "D") : null,
            el("span", { class: "badge" }, STATUS[status] || status),
          ),
          el(
            "div",
            { class: "seat-meta" },
            "seat " + seat,
            entry ? " · " + plural(count, "card") : "",
            entry && entry.points !== null ? el("span", { class: "pts" }, " · " + entry.points + " pts") : null,
            entry && entry.missed ? el("span", { class: "missed" }, " · missed " + entry.missed) : null,
          ),
          entry && count ? backs : null,
          pickList,
          onTurn ? clockBar(hand.deadline, t.rules.turn_seconds) : null,
        ),
      );
    }
    fill(box, ...boxes);
  }

  function clockBar(deadline, total) {
    return el("div", { class: "clock", "data-deadline": deadline || "", "data-total": total }, el("div", { class: "clock-fill" }), el("span", { class: "clock-text" }, ""));
  }

  function renderPiles() {
    const t = S.t;
    const box = $("piles");
    const hand = t.hand;
    const v = hand && hand.view;
    if (!v) {
      fill(box);
      return;
    }
    const decks = decksOf(t);
    const wr = wildRankOf(v);
    const top = v.open.length ? v.open[v.open.length - 1] : null;
    const wildText = wr === null ? "only printed jokers are wild" : "wild: every " + (R.cards.RANKS[wr] === "T" ? "10" : R.cards.RANKS[wr]) + " and the jokers";
    fill(box,
      el("div", { class: "pile", id: "closed-pile" }, el("div", { class: "pile-label" }, "Closed pile"), el("span", { class: "card back big", "aria-label": plural(v.closed_count, "card") + " in the closed pile" }, el("b", { id: "closed-count" }, String(v.closed_count))), el("div", { class: "pile-note" }, v.reshuffles ? "reshuffled " + v.reshuffles + "×" : plural(v.closed_count, "card"))),
      el("div", { class: "pile", id: "open-pile" }, el("div", { class: "pile-label" }, "Open pile"), top === null ? el("span", { class: "card empty big" }, "empty") : cardView(top, decks, wr, "big"), el("div", { class: "pile-note" }, plural(v.open.length, "card"))),
      el("div", { class: "pile", id: "wild-pile" }, el("div", { class: "pile-label" }, "Wild card"), cardView(v.wild_indicator, decks, wr, "big"), el("div", { class: "pile-note wild-note" }, wildText)),
    );
  }

  function turnText(t, hand) {
    if (!t.rules) return "";
    if (t.paused) return "The table is paused.";
    if (!hand) {
      const seated = Object.keys(t.seats).length;
      return "Waiting for the next hand — it starts when " + t.rules.min_players + " seated players are connected (" + seated + " seated).";
    }
    if (hand.phase === "commit") return "Hand " + hand.hand_no + ": collecting every player's seed commitment" + (hand.seat !== null ? (hand.committed ? " — yours is in." : " — sending yours…") : ".");
    if (hand.phase === "reveal") return "Hand " + hand.hand_no + ": seeds are being revealed" + (hand.seat !== null ? (hand.revealed ? " — yours is in." : " — revealing yours…") : ".");
    if (hand.phase === "deal") return "Dealing…";
    const v = hand.view;
    if (!v) return "";
    if (v.phase === "ended" || hand.ended) return "Hand " + hand.hand_no + " is over.";
    const me = v.me;
    if (me && me.status !== "playing") return "You are out of this hand (" + (STATUS[me.status] || me.status) + "). " + seatName(v.turn) + " is playing.";
    if (me && v.turn === me.seat) return v.phase === "draw" ? "Your turn: draw a card — closed pile or open pile." : "Your turn: discard a card, or declare.";
    return seatName(v.turn) + (seatName(v.turn) === "You" ? "r" : "'s") + " turn" + (v.phase === "discard" ? " (drew, now discarding)." : ".");
  }

  function renderMine() {
    const t = S.t;
    const hand = t.hand;
    const v = hand && hand.view;
    const me = v && v.me;
    $("turn-status").textContent = turnText(t, hand);
    $("turn-status").dataset.myTurn = String(!!(me && v.turn === me.seat && v.phase !== "ended" && me.status === "playing"));
    const seat = hand && hand.seat !== null ? hand.seat : mySeat();
    const title = $("mine-title");
    const clock = $("mine-clock");
    fill(clock);
    if (seat === null) {
      fill(title, el("b", null, "You are watching"), el("span", { class: "muted" }, t.rules ? " — pick a free seat above to play." : ""));
    } else {
      const entry = seatEntry(hand, seat);
      fill(title, el("b", null, S.me.name), el("span", { class: "muted" }, " · seat " + seat), entry && entry.points !== null && entry.status !== "playing" ? el("span", { class: "pts" }, " · " + entry.points + " points") : null);
      if (me && v.phase !== "ended" && v.turn === me.seat && me.status === "playing") clock.append(clockBar(hand.deadline, t.rules.turn_seconds));
      else if (hand && hand.header && (hand.phase === "commit" || hand.phase === "reveal")) {
        const h = hand.header.header;
        clock.append(clockBar(hand.deadline, (hand.phase === "commit" ? h.commit_ms : h.reveal_ms) / 1000));
      }
    }
    renderHand();
    renderSuggestion();
    renderActions();
  }

  function renderHand() {
    const t = S.t;
    const box = $("hand");
    const hand = t.hand;
    const me = hand && hand.view && hand.view.me;
    if (!me || !hand.arr || me.status !== "playing" || hand.view.phase === "ended") {
      const msg = !hand ? "" : hand.seat === null ? (mySeat() !== null ? "You sit this hand out; you play from the next one." : "") : me && me.status !== "playing" ? "Your cards are out of play." : hand.phase === "commit" || hand.phase === "reveal" ? "Shuffling: your cards come when every seed is in." : "";
      fill(box, msg ? el("p", { class: "hand-msg" }, msg) : "");
      $("mine-points").textContent = "";
      return;
    }
    const decks = decksOf(t);
    const wr = wildRankOf(hand.view);
    const groups = hand.arr.map((g, gi) => {
      const descs = g.map((id) => R.cards.describe(id, decks));
      const kind = g.length >= 3 ? R.groups.classify(descs, wr) : null;
      const label = { pure: "pure sequence", impure: "sequence", set: "set" }[kind] || (g.length >= 3 ? "not a group yet" : "");
      return el(
        "div",
        { class: "group" + (kind ? " ok " + kind : ""), role: "group", "data-group": gi, "aria-label": "group " + (gi + 1) + (label ? ", " + label : "") },
        el("div", { class: "group-cards" }, g.map((id) => handCard(id, decks, wr, gi))),
        el("div", { class: "group-label" }, label),
      );
    });
    const zone = el("div", { class: "group new-group", "data-group": "new", "aria-hidden": "true" }, el("div", { class: "group-cards" }, "drop here for a new group"));
    fill(box, ...groups, zone);
    for (const g of box.querySelectorAll(".group")) {
      g.addEventListener("dragover", (e) => {
        e.preventDefault();
        g.classList.add("over");
      });
      g.addEventListener("dragleave", () => g.classList.remove("over"));
      g.addEventListener("drop", (e) => {
        e.preventDefault();
        g.classList.remove("over");
        const card = Number(e.dataTransfer.getData("text/plain"));
        if (!Number.isInteger(card) || !hand.arr.flat().includes(card)) return;
        const target = e.target.closest ? e.target.closest("[data-card]") : null;
        let before = target ? Number(target.dataset.card) : null;
        if (target && before !== card) {
          const r = target.getBoundingClientRect();
          if (e.clientX > r.left + r.width / 2) {
            const grp = hand.arr[Number(g.dataset.group)] || [];
            const k = grp.indexOf(before);
            before = k >= 0 && k + 1 < grp.length ? grp[k + 1] : null;
          }
        }
        if (before === card) return;
        moveCard(hand, card, g.dataset.group === "new" ? "new" : Number(g.dataset.group), before);
      });
    }
  }

  function handCard(id, decks, wr, gi) {
    const t = S.t;
    const c = cardInfo(id, decks, wr);
    const sel = t.selected === id;
    const fresh = t.hand.fresh.has(id);
    const b = el(
      "button",
      {
        type: "button",
        class: cardClass(c, "hand-card") + (sel ? " selected" : "") + (fresh ? " fresh" : ""),
        draggable: "true",
        "data-card": id,
        "data-face": c.face,
        "data-group": gi,
        "aria-pressed": sel ? "true" : "false",
        "aria-label": c.name + (fresh ? ", just drawn" : ""),
        title: c.name,
      },
      cardFace(c, fresh ? el("span", { class: "c-new" }, "new") : null),
    );
    b.addEventListener("click", () => selectCard(id));
    b.addEventListener("dragstart", (e) => {
      e.dataTransfer.setData("text/plain", String(id));
      e.dataTransfer.effectAllowed = "move";
      b.classList.add("dragging");
    });
    b.addEventListener("dragend", () => b.classList.remove("dragging"));
    b.addEventListener("keydown", (e) => {
      if (e.shiftKey && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
        e.preventDefault();
        if (t.selected !== id) selectCard(id);
        nudge(t.hand, id, e.key === "ArrowLeft" ? -1 : 1);
      } else if (!e.shiftKey && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
        e.preventDefault();
        const all = t.hand.arr.flat();
        const k = all.indexOf(id) + (e.key === "ArrowLeft" ? -1 : 1);
        if (k >= 0 && k < all.length) focusCard(all[k]);
      }
    });
    return b;
  }

  function focusCard(id) {
    const b = document.querySelector('#hand button[data-card="' + id + '"]');
    if (b) b.focus();
  }

  function selectCard(id) {
    const t = S.t;
    t.selected = t.selected === id ? null : id;
    if (t.confirm && t.confirm.what === "declare") t.confirm = null;
    renderHand();
    renderActions();
    focusCard(id);
  }

  function renderSuggestion() {
    const t = S.t;
    const hand = t && t.hand;
    const box = $("suggestion");
    const pts = $("mine-points");
    const s = hand && hand.suggestion;
    if (!s || !hand.view || !hand.view.me || hand.view.phase === "ended" || s.key !== suggestionKey(hand)) {
      fill(box);
      box.dataset.move = "";
      box.dataset.card = "";
      pts.textContent = "";
      return;
    }
    box.dataset.move = s.move || "";
    box.dataset.card = s.card === null ? "" : String(s.card);
    const decks = decksOf(t);
    const wr = wildRankOf(hand.view);
    fill(box, s.text ? el("span", null, s.text) : "", s.card !== null && t.selected !== s.card ? el("button", { type: "button", class: "link", id: "pick-suggested", on: { click: () => selectCard(s.card) } }, "select " + short(s.card, decks)) : null);
    // the count of the cards as they stand (13), or the best 13 of 14
    const me = hand.view.me;
    if (me.status === "playing" && me.cards.length === 13) pts.textContent = "Your hand counts " + countOf(me.cards, decks, wr).points + " points";
    else if (s.points !== null) pts.textContent = "Best after a discard: " + s.points + " points";
    else pts.textContent = s.move === "declare" ? "A valid declare is in your hand" : "";
  }

  function renderActions() {
    const t = S.t;
    if (!t) return;
    const hand = t.hand;
    const v = hand && hand.view;
    const me = v && v.me;
    const decks = decksOf(t);
    const live = t.conn === "open" && !t.paused && !t.busy;
    const mine = !!(live && me && me.status === "playing" && v.phase !== "ended" && v.turn === me.seat && hand.keyOk);
    const drawPhase = mine && v.phase === "draw";
    const discardPhase = mine && v.phase === "discard";
    const sel = t.selected;
    const top = v && v.open.length ? v.open[v.open.length - 1] : null;
    const set = (id, enabled, label) => {
      const b = $(id);
      b.disabled = !enabled;
      if (label !== undefined) b.firstChild.textContent = label;
    };
    set("btn-draw-closed", drawPhase, "Draw closed");
    set("btn-draw-open", drawPhase && top !== null, top !== null ? "Take " + short(top, decks) : "Take open");
    set("btn-discard", discardPhase && sel !== null, sel !== null ? "Discard " + short(sel, decks) : "Discard");
    const confirm = t.confirm && t.confirm.until > Date.now() ? t.confirm.what : null;
    const declareB = $("btn-declare");
    declareB.disabled = !(discardPhase && sel !== null);
    declareB.textContent = confirm === "declare" ? "Declare anyway? (wrong: 80 points)" : sel !== null ? "Declare (" + short(sel, decks) + " down)" : "Declare";
    declareB.classList.toggle("confirming", confirm === "declare");
    const dropB = $("btn-drop");
    dropB.disabled = !drawPhase;
    const dropCost = me && me.drawn_any ? 40 : 20;
    dropB.textContent = confirm === "drop" ? "Confirm drop (" + dropCost + " points)" : "Drop (" + dropCost + ")";
    dropB.classList.toggle("confirming", confirm === "drop");
    const seated = mySeat() !== null;
    const leaveB = $("btn-leave");
    leaveB.disabled = !(t.conn === "open" && !t.busy && seated);
    const inHand = hand && hand.seat !== null && !hand.ended && (!me || me.status === "playing");
    leaveB.textContent = confirm === "leave" ? (inHand ? "Confirm: leave (40 points)" : "Confirm: leave") : "Leave";
    leaveB.classList.toggle("confirming", confirm === "leave");
    const haveCards = !!(me && me.status === "playing" && hand.arr && v.phase !== "ended");
    $("btn-sort").disabled = !haveCards;
    $("btn-new-group").disabled = !(haveCards && sel !== null);
    $("actions").hidden = !seated && !(hand && hand.seat !== null);
  }

  function confirmOr(what, run) {
    const t = S.t;
    if (t.confirm && t.confirm.what === what && t.confirm.until > Date.now()) {
      t.confirm = null;
      run();
      return;
    }
    t.confirm = { what, until: Date.now() + 6000 };
    renderActions();
    setTimeout(() => {
      if (S.t === t && t.confirm && t.confirm.until <= Date.now()) {
        t.confirm = null;
        renderActions();
      }
    }, 6100);
  }

  function onDeclare() {
    const t = S.t;
    const hand = t.hand;
    const card = t.selected;
    if (card === null || !hand || !hand.view) return;
    const decks = decksOf(t);
    const kept = hand.view.me.cards.filter((c) => c !== card);
    const valid = countOf(kept, decks, wildRankOf(hand.view)).valid_declare;
    if (valid) act("declare", card);
    else confirmOr("declare", () => act("declare", card));
  }

  // ------------------------------------------------------------------ rendering: results

  const HOW = { declared: "declared", wrong_declare: "wrong declare", dropped: "dropped", left: "left the table", forfeit: "sat out (withheld the seed)", playing: "counted" };

  /** Each seat of a transcript: how it ended, its cards as groups and loose, points and tokens. */
  function summarize(T) {
    const header = T.log[0].header;
    const decks = R.cards.decksFor(header.rules.seats);
    const out = { decks, header, wildIndicator: null, rows: [], void: T.result === null, voidReason: null, settlement: T.result ? T.result.settlement : null, result: T.result };
    const rows = new Map(header.seats.map((s) => [s.seat, { seat: s.seat, player_id: s.player_id, how: "", groups: [], loose: [], cards: [], points: null, delta: null, winner: false }]));
    let end = null;
    for (const rec of T.log) {
      if (rec.type === "void") out.voidReason = rec.reason;
      for (const e of rec.events || []) {
        const row = rows.get(e.seat);
        if (e.kind === "deal") out.wildIndicator = e.data.wild_indicator;
        else if (e.kind === "forfeit") row.how = HOW.forfeit;
        else if (e.kind === "drop") {
          row.how = e.data.reason === "clock" ? "dropped by the clock" : e.data.points === 20 ? "first drop" : "middle drop";
          row.cards = e.private.cards || [];
          row.out = true;
        } else if (e.kind === "leave") {
          row.how = HOW.left;
          row.cards = e.private.cards || [];
          row.out = true;
        } else if (e.kind === "declare") {
          if (e.data.valid) row.groups = e.data.groups;
          else {
            row.how = HOW.wrong_declare;
            row.cards = e.private.cards || [];
            row.out = true;
          }
        } else if (e.kind === "end") end = e.data;
      }
    }
    if (end) {
      for (const [seat, c] of Object.entries(end.counted || {})) {
        const row = rows.get(Number(seat));
        row.how = "counted";
        row.groups = c.groups;
        row.loose = c.loose;
      }
      for (const [seat, cards] of Object.entries(end.hands || {})) {
        const row = rows.get(Number(seat));
        if (!row.groups.length && !row.loose.length) row.cards = cards;
      }
      const w = rows.get(end.winner);
      w.winner = true;
      w.how = end.reason === "declare" ? "won — valid declare" : "won — last one standing";
    }
    if (T.result) {
      for (const row of rows.values()) {
        row.points = T.result.points[String(row.seat)];
        row.delta = T.result.settlement.deltas[String(row.seat)];
      }
    }
    out.rows = [...rows.values()];
    return out;
  }

  function renderResults() {
    const t = S.t;
    const box = $("results");
    const res = t.results;
    if (!res || !t.resultsOpen) {
      box.hidden = true;
      fill(box);
      return;
    }
    box.hidden = false;
    const close = el("button", { type: "button", class: "ghost close", id: "results-close", on: { click: () => ((t.resultsOpen = false), renderTable()) } }, "Back to the table");
    const verifyHref = "/verify?hand=" + encodeURIComponent(res.hand_id) + (S.serverKey ? "&key=" + S.serverKey : "");
    const evidence = evidenceFor(res.hand_no);
    const tools = el(
      "div",
      { class: "results-tools" },
      el("a", { class: "button primary", id: "verify-link", href: verifyHref, target: "_blank", rel: "noopener" }, "Verify this hand \u2197"),
      el("button", { type: "button", id: "download-evidence", on: { click: () => downloadEvidence(res.hand_no) }, disabled: !evidence.length }, "Download evidence (" + plural(evidence.length, "item") + ")"),
      res.transcriptText ? el("button", { type: "button", id: "download-transcript", on: { click: () => C.download("transcript-" + t.id + "-hand" + res.hand_no + ".json", res.transcriptText) } }, "Download transcript") : null,
      close,
    );
    const help = el("p", { class: "small" }, "The verifier replays the whole hand in your browser from the published transcript and the server key this browser pinned. Drop your evidence file (the server's signed receipts and heads you were sent) onto it to check that the transcript is the game you were shown.");
    if (!res.transcript) {
      const p = res.push;
      fill(box,
        el("h2", { id: "results-title" }, "Hand " + res.hand_no + (p && p.void ? " was voided" : " is over")),
        res.error ? el("p", { class: "bad" }, "The transcript could not be loaded: " + C.explain(res.error).text) : el("p", { class: "muted" }, "Loading the transcript…"),
        p && p.result ? settlementLine(p.result.settlement, p.result.winner) : null,
        tools,
      );
      return;
    }
    const sum = summarize(res.transcript);
    const wr = sum.wildIndicator === null ? null : R.cards.wildRankOf(R.cards.describe(sum.wildIndicator, sum.decks));
    const rows = sum.rows.map((row) => {
      const cell = el("td", { class: "cards-cell" });
      for (const g of row.groups) cell.append(el("span", { class: "rgroup" }, cardsView(orderGroup(g, sum.decks, wr), sum.decks, wr, "small")));
      if (row.loose.length) cell.append(el("span", { class: "rloose" }, el("span", { class: "small" }, "loose "), cardsView(sortedIds(row.loose, sum.decks, wr), sum.decks, wr, "small")));
      if (!row.groups.length && !row.loose.length && row.cards.length) cell.append(el("span", { class: "rout" }, row.out ? el("span", { class: "rout-label" }, "out of play") : null, cardsView(sortedIds(row.cards, sum.decks, wr), sum.decks, wr, "small")));
      if (!cell.childNodes.length) cell.append(el("span", { class: "small" }, "—"));
      const isMe = S.me && row.player_id === S.me.id;
      return el(
        "tr",
        { "data-seat": row.seat, class: (row.winner ? "winner" : "") + (isMe ? " me" : "") },
        el("td", null, el("b", null, nameOf(row.player_id)), el("div", { class: "small" }, "seat " + row.seat)),
        el("td", { class: "how" }, row.winner ? el("span", { class: "trophy", "aria-hidden": "true" }, "\u2605 ") : null, row.how || "—"),
        cell,
        el("td", { class: "num points", "data-points": row.points === null ? "" : row.points }, row.points === null ? "—" : String(row.points)),
        el("td", { class: "num tokens " + (row.delta > 0 ? "plus" : row.delta < 0 ? "minus" : ""), "data-delta": row.delta === null ? "" : row.delta }, row.delta === null ? "—" : signed(row.delta) + " HT"),
      );
    });
    const winner = sum.rows.find((r) => r.winner);
    const title = sum.void ? "Hand " + res.hand_no + " was voided" : "Hand " + res.hand_no + ": " + (winner ? nameOf(winner.player_id) + (winner.player_id === S.me.id ? " win" : " wins") : "over");
    fill(box,
      el("div", { class: "results-head" }, el("h2", { id: "results-title", tabindex: "-1" }, title), el("span", { class: "small" }, "hand id " + res.hand_id + " · table " + t.id)),
      sum.void ? el("p", { class: "bad" }, "Nobody was charged. Reason: " + (sum.voidReason || "—")) : null,
      el(
        "table",
        { class: "results-table", id: "results-table" },
        el("thead", null, el("tr", null, el("th", null, "Player"), el("th", null, "How it ended"), el("th", null, "Cards"), el("th", { class: "num" }, "Points"), el("th", { class: "num" }, "Tokens"))),
        el("tbody", null, rows),
      ),
      sum.settlement ? settlementLine(sum.settlement, sum.result.winner) : null,
      tools,
      help,
    );
    if (t.resultsFocused !== res.hand_id) {
      // the hand is over: take the keyboard to its result (Escape goes back to the table)
      t.resultsFocused = res.hand_id;
      $("results-title").focus();
    }
  }

  function settlementLine(st, winner) {
    return el(
      "p",
      { class: "settlement", id: "settlement" },
      "Pot ",
      el("b", null, ht(st.pot)),
      " · house commission ",
      el("b", { id: "commission" }, ht(st.commission)),
      " (" + pct(st.commission_bps) + ") · the winner receives ",
      el("b", null, ht(st.pot - st.commission)),
      " · " + ht(st.point_value) + " a point" + (winner !== undefined ? "" : ""),
    );
  }

  // ------------------------------------------------------------------ rendering: the side

  function renderSide() {
    const t = S.t;
    if (!t) return;
    const info = $("table-info");
    if (t.rules) {
      const r = t.rules;
      fill(info,
        el("h2", null, "Table ", el("span", { class: "tid" }, t.id)),
        el("p", { class: "stakes-line" }, ht(r.point_value) + " a point · hold " + ht(130 * r.point_value) + " · commission " + pct(r.commission_bps)),
        el("p", { class: "small" }, r.seats + " seats · " + r.turn_seconds + " s a turn · dropped after " + r.max_missed_turns + " missed turns"),
        connLine(t),
      );
    } else fill(info, el("h2", null, "Table ", el("span", { class: "tid" }, t.id)), connLine(t));
    renderHandInfo();
    renderLog();
    renderEvidence();
  }

  function connLine(t) {
    const text = { open: "connected", connecting: "connecting…", lost: "reconnecting…", replaced: "open in another window", gone: "gone" }[t.conn] || t.conn;
    return el("p", { class: "conn conn-" + t.conn, id: "conn-state", "data-state": t.conn }, el("span", { class: "dot", "aria-hidden": "true" }), text + (t.paused ? " · paused" : ""));
  }

  function renderHandInfo() {
    const t = S.t;
    const box = $("hand-info");
    const hand = t.hand;
    const items = [];
    if (!hand) {
      items.push(el("p", { class: "small" }, "No hand in progress."));
    } else {
      items.push(el("p", null, el("b", null, "Hand " + hand.hand_no), hand.hand_id ? el("span", { class: "small" }, " · id " + hand.hand_id) : null, hand.view && hand.view.turn_no ? el("span", { class: "small" }, " · turn " + hand.view.turn_no) : null));
      if (hand.seat !== null) {
        items.push(
          el(
            "ul",
            { class: "checks" },
            el("li", { class: hand.keyOk ? "ok" : "bad", id: "key-check" }, hand.keyOk ? "The signed header lists your key" : "The header lists another key for you — nothing is signed in this hand"),
            el("li", { class: hand.committed ? "ok" : "wait" }, hand.committed ? "Your seed is committed" : "Seed not committed yet"),
            el("li", { class: hand.revealed ? "ok" : "wait" }, hand.revealed ? "Your seed is revealed" : "Seed not revealed yet"),
            hand.serverKeyOk === false ? el("li", { class: "bad" }, "The header names a server key you have not pinned") : null,
            hand.badSig ? el("li", { class: "bad" }, "A server signature did not verify (" + hand.badSig + ")") : null,
          ),
          hand.keyOk === false && hand.header
            ? el("button", { type: "button", id: "download-header", on: { click: () => C.download("header-" + t.id + "-hand" + hand.hand_no + ".json", JSON.stringify(hand.header, null, 1) + "\n") } }, "Download the signed header (your proof)")
            : null,
        );
      } else items.push(el("p", { class: "small" }, "You do not play in this hand."));
    }
    if (S.key) items.push(el("p", { class: "small key-line" }, "Your key ", el("code", { title: S.key.pub }, S.key.fingerprint.slice(0, 16)), " (in this browser)"));
    if (S.serverKey) items.push(el("p", { class: "small key-line" }, "Server key ", el("code", { title: S.serverKey }, S.serverKey.slice(0, 16)), S.servedKey && S.servedKey !== S.serverKey ? el("span", { class: "bad" }, " — the server now publishes another key!") : " (pinned)"));
    if (t.results && !t.resultsOpen) items.push(el("button", { type: "button", id: "show-results", on: { click: () => ((t.resultsOpen = true), renderTable()) } }, "Results of hand " + t.results.hand_no));
    fill(box, ...items);
  }

  function renderLog() {
    const t = S.t;
    if (!t) return;
    const ol = $("log");
    const last = t.log.slice(-60).reverse();
    fill(ol, ...last.map((x) => el("li", { class: x.kind }, x.text)));
  }

  function renderEvidence() {
    const t = S.t;
    if (!t) return;
    const box = $("evidence-box");
    const hand = t.hand;
    const handNo = hand ? hand.hand_no : t.results ? t.results.hand_no : null;
    if (handNo === null) {
      fill(box, el("h2", null, "Evidence"), el("p", { class: "small" }, "The server's signed receipts and heads are kept here for every hand you play."));
      return;
    }
    const n = evidenceFor(handNo).length;
    fill(box,
      el("h2", null, "Evidence"),
      el("p", { class: "small", id: "evidence-count", "data-count": n }, "Hand " + handNo + ": " + plural(n, "signed receipt or head", "signed receipts and heads") + " kept."),
      el("button", { type: "button", id: "download-evidence-side", disabled: !n, on: { click: () => downloadEvidence(handNo) } }, "Download evidence"),
    );
  }

  // ------------------------------------------------------------------ clocks

  function tickClocks() {
    const now = Date.now() + (S.skew || 0);
    for (const c of document.querySelectorAll(".clock")) {
      const d = Number(c.dataset.deadline);
      const total = Number(c.dataset.total) * 1000;
      if (!d) continue;
      const left = Math.max(0, d - now);
      const fill = c.querySelector(".clock-fill");
      const txt = c.querySelector(".clock-text");
      if (total > 0) fill.style.width = Math.min(100, (100 * left) / total).toFixed(1) + "%";
      else fill.style.width = "100%";
      c.classList.toggle("low", left < 5000);
      txt.textContent = Math.ceil(left / 1000) + " s";
    }
  }

  // ------------------------------------------------------------------ wiring

  function onKey(e) {
    if (document.body.dataset.view !== "table" || e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = document.activeElement ? document.activeElement.tagName : "";
    if (tag === "INPUT" || tag === "TEXTAREA") return;
    const click = (id) => {
      const b = $(id);
      if (!b.disabled) b.click();
    };
    const k = e.key.toLowerCase();
    if (k === "c") click("btn-draw-closed");
    else if (k === "o") click("btn-draw-open");
    else if (k === "d") click("btn-discard");
    else if (k === "s") click("btn-sort");
    else if (k === "g") click("btn-new-group");
    else if (e.key === "Escape") {
      if (S.t && S.t.resultsOpen) {
        S.t.resultsOpen = false;
        renderTable();
      } else hideError();
    } else return;
    e.preventDefault();
  }

  function init() {
    $("signin-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const tok = $("token-input").value.trim();
      if (tok) signIn(tok).then((ok) => ok && ($("token-input").value = ""));
    });
    $("create-form").addEventListener("submit", createPlayer);
    $("sign-out").addEventListener("click", signOut);
    $("alert-close").addEventListener("click", hideError);
    $("notice").addEventListener("click", () => ($("notice").hidden = true));
    $("lobby-refresh").addEventListener("click", loadLobby);
    $("btn-draw-closed").addEventListener("click", () => act("draw_closed"));
    $("btn-draw-open").addEventListener("click", () => act("draw_open"));
    $("btn-discard").addEventListener("click", () => S.t && S.t.selected !== null && act("discard", S.t.selected));
    $("btn-declare").addEventListener("click", onDeclare);
    $("btn-drop").addEventListener("click", () => confirmOr("drop", () => act("drop")));
    $("btn-leave").addEventListener("click", () => confirmOr("leave", leave));
    $("btn-sort").addEventListener("click", sortHand);
    $("btn-new-group").addEventListener("click", () => {
      const t = S.t;
      if (t && t.hand && t.selected !== null) {
        const card = t.selected;
        moveCard(t.hand, card, "new", null);
        focusCard(card);
      }
    });
    document.addEventListener("keydown", onKey);
    window.addEventListener("hashchange", route);
    setInterval(tickClocks, 250);
    const token = C.store.get("token");
    if (token) signIn(token, true);
    else route();
    document.body.dataset.ready = "true";
  }

  /* For the tests and the curious: the page's own functions (a move sent this way
     goes through exactly the path the buttons take, without their guards). */
  window.RummyTable = {
    state: S,
    act,
    sortHand,
    dropConnection: () => S.t && S.t.sock && S.t.sock.drop(),
    receive: (message) => onPush(message),
    evidence: (handNo) => evidenceFor(handNo),
    summarize,
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

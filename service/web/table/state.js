/* What the page knows: the player, the table being shown and its hand.  Every message
   from the server reaches the table's state through one function, update(message),
   which changes the state and returns what the rest of the page must do about it
   ("effects": commit a seed, fetch a transcript, keep an item of evidence…), so a
   change to the messages (slimmer pushes) is a change here alone. */
import { parseTime, partsText, plural } from "./dom.js";
import { decksFor, wildRankOf } from "./cardview.js";
import { bySuit, sync } from "./arranging.js";
import { eventLine } from "./story.js";
import { store } from "./store.js";
import { headerItem, keptDealerAfter, keptRules, shownOf } from "./evidence.js";

const LOG_KEPT = 150;
/** The shortest seed window a header may give (ms; docs/fairness.md §13, RULES.md D21). */
const WINDOW_MS_MIN = 2000;
const CLOSED_WORDS = "The operator closed this table: no hand is dealt here any more.";

export const S = {
  me: null, // GET /api/me
  key: null, // {privateKey, pub, fingerprint, where}
  serverKey: null, // the server key this browser pinned (hex)
  servedKey: null, // the key the server publishes now
  names: new Map(), // player id -> name
  maxAway: new Map(), // table id -> max_away_hands (from the lobby)
  tables: [],
  hands: null, // GET /api/me/hands
  t: null, // the table being shown
  pendingSit: null, // {tableId, seat} to sit once joined
  skew: 0, // the server's clock minus this browser's (ms), from hello
};

export function newTable(id) {
  const t = {
    id,
    sock: null,
    rules: null,
    seats: {},
    paused: false,
    pausedMessage: "",
    conn: "connecting",
    everConnected: false,
    goingDown: null, // the server said it is going down: its message, until the page is back
    moving: false, // the table moved to another node: until the page is there
    hand: null,
    log: [],
    busy: false,
    selected: null,
    confirm: null,
    results: null, // {push, transcript, transcriptText, hand_no, hand_id, error} of the last hand
    resultsMode: "closed", // "open" (the panel), "docked" (a bar over the table), "closed"
    situation: null, // {kind, parts, rule}: why the player's seat is gone, the table closed…
    status: "open", // the table's: "open", "closing" (no new hand) or "closed" (its snapshot, its "closed" push)
    satDuring: null, // the hand in progress when the player sat (dealt without them)
    snapshot: null,
    shown: new Map(), // hand_no -> record -> what the player was shown then (saw)
  };
  if (S.me) t.log = store.getJSON(logName(id), []).filter((x) => x && Array.isArray(x.parts));
  return t;
}

export function newHand(handNo, handId) {
  return {
    hand_no: handNo,
    hand_id: handId,
    phase: null,
    seat: null,
    keyOk: null,
    headerWrong: null, // why the signed header is not one to sign under: another table, hand or rules (D38), or dealer (D3)
    listedKey: null,
    serverKeyOk: null,
    header: null,
    commitments: null,
    records: new Map(),
    newest: -1,
    view: null,
    viewI: -1, // the record the view is of
    deadline: null,
    committed: false,
    revealed: false,
    working: false,
    ended: false,
    picks: {},
    arr: null,
    fresh: new Set(),
    badSig: null,
    badAck: null, // the fields of an ack that did not echo the move sent (§15, "On receipt")
    fork: null, // two kept items that named two links for one record (§15, "On receipt")
    suggestion: null,
  };
}

export const decksOf = (t) => decksFor(t && t.rules ? t.rules.seats : 6);

// ------------------------------------------------------------------ names and seats

export function nameOf(playerId) {
  if (!playerId) return "—";
  return S.names.get(playerId) || playerId;
}

/** The player at a seat of the table shown (the hand's header first): {name, you}. */
export function who(seat) {
  const t = S.t;
  let pid = t ? t.seats[String(seat)] : null;
  const hand = t && t.hand;
  if (hand && hand.header) {
    const e = hand.header.header.seats.find((s) => s.seat === seat);
    if (e) pid = e.player_id;
  }
  if (!pid) return { name: "seat " + seat, you: false };
  return { name: nameOf(pid), you: !!(S.me && pid === S.me.id) };
}

export function mySeat(t) {
  if (!t || !S.me) return null;
  for (const [s, p] of Object.entries(t.seats)) if (p === S.me.id) return Number(s);
  return null;
}

// ------------------------------------------------------------------ the log

function logName(tableId) {
  return "log." + S.me.id + "." + tableId;
}

/** A line of the table's log: parts (strings and {name}), kind ("", hand, good, bad, me, sys). */
export function logLine(t, parts, kind) {
  if (typeof parts === "string") parts = [parts];
  t.log.push({ parts, text: partsText(parts), kind: kind || "", at: Date.now() });
  if (t.log.length > LOG_KEPT) t.log.splice(0, t.log.length - LOG_KEPT);
  if (S.me) store.setJSON(logName(t.id), t.log);
}

// ------------------------------------------------------------------ the seat this browser had

function seatName(tableId) {
  return "seat." + S.me.id + "." + tableId;
}

function rememberSeat(t) {
  if (!S.me) return;
  const seat = mySeat(t);
  if (seat === null) store.remove(seatName(t.id));
  else store.set(seatName(t.id), String(seat));
}

/** Words for why the player's seat was stood up (an entry of a table push's "stood", or a snapshot's "stood_up"). */
export function stoodWords(t, entry) {
  const seat = "seat " + entry.seat;
  const away = S.maxAway.get(t.id);
  switch (entry.reason) {
    case "away":
      return {
        parts: [entry.hand_no
          ? "Your seat (" + seat + ") was stood up as hand " + entry.hand_no + " was dealt: this page had no connection to the table for " + (away ? plural(away, "hand") : "several hands") + " in a row, and a seat nobody plays from is stood up (rule D34). Nothing more was charged. Sit again to play."
          : "Your seat (" + seat + ") was stood up: this page had no connection to the table for minutes while too few players were there to deal a hand, and a seat nobody plays from is stood up (rule D34). Nothing was charged. Sit again to play."],
        rule: "D34",
      };
    case "cannot_cover":
      return {
        parts: ["Your seat (" + seat + ") was stood up" + (entry.hand_no ? " as hand " + entry.hand_no + " was dealt: your balance could not cover the hold a hand needs (rule D20) for " + (away ? plural(away, "hand") : "several hands") + " in a row" : ": your balance could not cover the hold a hand needs (rule D20) for minutes, and the table could not deal without you") + ", and a seat nobody can be dealt in at is stood up (rule D34). Nothing was charged. Add to your balance and sit again to play."],
        rule: "D34",
      };
    case "clock":
      return {
        parts: ["The clock dropped you in hand " + entry.hand_no + " (your turns ran out), so your seat (" + seat + ") was stood up when the hand ended (rule D31). The drop was charged in that hand; nothing more. Sit again to play."],
        rule: "D31",
      };
    case "operator":
      return { parts: ["The card room's operator stood your seat (" + seat + ") up" + (entry.hand_no ? " as hand " + entry.hand_no + " ended" : "") + ". Sit again to play, or ask the card room why."], rule: null };
    case "closed":
      return { parts: ["The operator closed this table: every seat was stood up, yours (" + seat + ") too. No hand is dealt here any more."], rule: null };
    case "left":
      if (entry.rule === "D36") return { parts: ["You left before hand " + entry.hand_no + " was dealt: your seat (" + seat + ") was stood up as it ended (rule D36)."], rule: "D36" };
      return { parts: ["You left " + seat + " (from another window, or through the API)" + (entry.rule ? ", during a hand: 40 points (rule D15)." : ".")], rule: entry.rule };
    case "after_hand":
      return { parts: ["Your seat (" + seat + ") was stood up as hand " + entry.hand_no + " ended, as was asked during the hand: by you, leaving before the deal (rule D36), or by the card room's operator."], rule: null };
    default:
      return { parts: ["Your seat (" + seat + ") was stood up (" + entry.reason + ")."], rule: entry.rule };
  }
}

// ------------------------------------------------------------------ the one way in

/** Apply a message to the table shown: a snapshot ({type: "snapshot", snapshot, how}),
    a connection state ({type: "conn", state, arg}) or any push of docs/api.md.
    Returns the effects for the page to carry out. */
export function update(m) {
  const t = S.t;
  const fx = [];
  if (!t) return fx;
  if (m.table_id !== undefined && m.table_id !== t.id && m.type !== "snapshot") return fx;
  switch (m.type) {
    case "snapshot":
      fromSnapshot(t, m.snapshot, m.how || {}, fx);
      break;
    case "conn":
      connState(t, m.state, m.arg, fx);
      break;
    case "hello":
      if (parseTime(m.now) !== null) S.skew = parseTime(m.now) - Date.now();
      break;
    case "table":
      onSeats(t, m, fx);
      break;
    case "hand":
      onHandPhase(t, m, fx);
      break;
    case "update":
      onUpdate(t, m, fx);
      break;
    case "result":
      onResult(t, m, fx);
      break;
    case "paused":
      t.paused = true;
      t.pausedMessage = m.message || "";
      logLine(t, "The table paused: " + m.message + ". No clock runs until it is back.", "sys");
      break;
    case "resumed":
      t.paused = false;
      fromSnapshot(t, m.snapshot, { resumed: true }, fx);
      break;
    case "shutdown":
      t.goingDown = m.message || "the server is going down";
      logLine(t, "The server is going down for a moment; the page reconnects by itself.", "sys");
      break;
    case "moved":
      t.moving = true;
      logLine(t, "The table moved to another server of the card room; the page follows it.", "sys");
      break;
    case "closed":
      t.status = "closed";
      if (!t.situation || t.situation.kind !== "stood") t.situation = { kind: "closed", parts: [CLOSED_WORDS], rule: null };
      logLine(t, "The operator closed the table.", "sys");
      break;
    case "replaced":
      logLine(t, "Another window took over this table.", "sys");
      break;
    case "error":
      fx.push({ do: "error", error: m.error }); // {code, message, rule}
      break;
  }
  return fx;
}

function connState(t, state, arg, fx) {
  const was = t.conn;
  t.conn = state;
  if (state === "open") {
    t.everConnected = true;
    // the snapshot that follows says the page is back, and from what
    t.backFrom = t.goingDown ? "The server is back" : t.moving ? "Connected to the table's new server" : null;
    t.goingDown = null;
    t.moving = false;
  } else if (state === "lost" && was === "open") {
    logLine(t, "The connection was lost.", "sys");
  } else if (state === "signed_out") {
    logLine(t, "Your session has ended: the page stopped reconnecting.", "sys");
  } else if (state === "refused") {
    fx.push({ do: "error", err: arg, context: "The table did not take you in" });
  } else if (state === "gone") {
    fx.push({ do: "error", err: arg, context: "Opening the table failed" }, { do: "lobby" });
  }
}

function onSeats(t, m, fx) {
  const had = mySeat(t);
  t.seats = m.seats;
  if (m.status === "closing" && t.status === "open") logLine(t, "The operator is closing this table: no hand is dealt here after the one in progress.", "sys");
  if (m.status === "open" || m.status === "closing" || m.status === "closed") t.status = m.status; // a closing table offers no seat
  for (const entry of m.stood || []) {
    if (S.me && entry.player_id === S.me.id) {
      if (entry.reason !== "left" || !(t.leaving || t.leftAfterHand)) {
        const words = stoodWords(t, entry);
        t.situation = { kind: "stood", parts: words.parts, rule: words.rule };
        logLine(t, words.parts, "bad");
      }
    } else if (entry.reason !== "left") {
      const why = { away: entry.hand_no ? "after hands away (D34)" : "after minutes away (D34)", cannot_cover: "as they could not cover the hold (D34)", clock: "after the clock dropped them (D31)", operator: "by the operator", closed: "as the table closed", after_hand: "as the hand ended" }[entry.reason] || "";
      logLine(t, ["The seat of ", { name: nameOf(entry.player_id) }, " (seat " + entry.seat + ") was stood up " + why + "."], "sys");
    }
  }
  const now = mySeat(t);
  if (now !== null && had === null) t.situation = null;
  rememberSeat(t);
  fx.push({ do: "refreshNames" });
}

function fromSnapshot(t, snap, how, fx) {
  if (!snap || snap.table_id !== t.id) return;
  const before = t.hand;
  const remembered = S.me ? store.get(seatName(t.id)) : null;
  t.snapshot = snap;
  t.status = snap.status || "open";
  t.rules = snap.rules;
  if (!t.satRules && snap.rules) t.satRules = snap.rules; // the rules the player sat under: a table's never change (D38)
  t.seats = snap.seats;
  t.paused = snap.paused;
  if (mySeat(t) === null && remembered !== null) {
    // the seat this browser had is gone: say why (the server remembers it until a restart)
    const words = snap.stood_up
      ? stoodWords(t, snap.stood_up)
      : {
          parts: ["Your seat (seat " + remembered + ") was stood up while this page was away: after hands in a row without a connection to the table (rule D34), when the clock dropped it (D31), or by the operator. Sit again to play."],
          rule: null,
        };
    t.situation = { kind: "stood", parts: words.parts, rule: words.rule };
    logLine(t, words.parts, "bad");
  }
  if (t.status === "closed" && (!t.situation || t.situation.kind !== "stood")) t.situation = { kind: "closed", parts: [CLOSED_WORDS], rule: null };
  rememberSeat(t);
  const h = snap.hand;
  let missed = null;
  if (h) {
    const same = before && before.hand_no === h.hand_no;
    const hand = same ? before : newHand(h.hand_no, h.hand_id);
    const seen = same ? before.newest : -1;
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
    hand.viewI = h.view ? h.i : -1;
    saw(t, hand);
    learnSeat(t, hand, fx);
    if (h.seat !== null && h.seat !== undefined) hand.seat = h.seat;
    const events = (h.events || []).filter((e) => e.i > seen);
    if (events.length) {
      if (seen >= 0) logLine(t, "While you were away:", "sys");
      hand.fresh = new Set();
      for (const e of events) onEvent(t, hand, e);
    }
    if (h.committed) hand.committed = true;
    if (h.revealed) hand.revealed = true;
    fx.push({ do: "keep", item: h.head });
    syncArrangement(t, hand);
    if (before && before !== hand && !before.ended) fx.push({ do: "ended", hand: before });
    if (h.phase === "commit" && h.committed === false) fx.push({ do: "commit", hand });
    else if (h.phase === "reveal" && h.committed && h.revealed === false) fx.push({ do: "reveal", hand });
    dockResultsIfMyTurn(t, hand);
  } else {
    if (before && !before.ended) fx.push({ do: "ended", hand: before });
    t.hand = null;
  }
  if (how.reconnected || how.resumed) {
    let text = how.resumed ? "The table is back" : t.backFrom || "Reconnected";
    t.backFrom = null;
    if (missed !== null) text += " — " + missed + (missed === 1 ? " move" : " moves") + " happened while you were away";
    else if (before && !h) text += " — the hand ended while you were away";
    else if (h && (!before || before.hand_no !== h.hand_no)) text += " — hand " + h.hand_no + " is being played";
    text += ".";
    fx.push({ do: "notice", text });
    logLine(t, text, "sys");
  }
  if (S.pendingSit && S.pendingSit.tableId === t.id) {
    const want = S.pendingSit;
    S.pendingSit = null;
    if (mySeat(t) === null) fx.push({ do: "sit", seat: want.seat });
  }
  fx.push({ do: "suggest" });
}

/** Why a signed header is not one to commit to, though it lists my key (or null): it
    names another table or hand than the one being dealt, gives other rules than the
    table's when I sat (a table's rules never change, RULES.md D38), a seed window
    shorter than the protocol allows (D21), or a dealer the button did not move to
    from the kept header of the hand before, or hand 1 dealt by another seat than its
    lowest (D3). */
function headerWrong(t, hand, header) {
  if (header.table_id !== t.id || header.hand_no !== hand.hand_no) return "is for table " + header.table_id + ", hand " + header.hand_no;
  const R = window.RummyPF;
  const rules = (S.me && keptRules(S.me.id, t.id, hand.hand_no)) || t.satRules;
  let same = false;
  try {
    same = !rules || R.canonical(header.rules) === R.canonical(rules);
  } catch (e) {
    same = false; // not JSON data of §2
  }
  if (!same) return "gives other rules than the table's (" + ruleDiff(header.rules, rules) + "; D38)";
  for (const name of ["commit_ms", "reveal_ms"]) {
    // D21: a window shorter than the protocol's floor would close on this page's seed
    if (!Number.isInteger(header[name]) || header[name] < WINDOW_MS_MIN) return "gives a seed window " + name + " of " + header[name] + " ms, below the protocol's " + WINDOW_MS_MIN + " (D21)";
  }
  if (header.hand_no === 1) {
    // D3: nothing before a table's first hand moves the button; its lowest seat deals it (§14 chain)
    const lowest = Math.min(...header.seats.map((e) => e.seat));
    if (header.dealer !== lowest) return "is dealt by seat " + header.dealer + ", not seat " + lowest + ", a table's first hand's (D3)";
    return null;
  }
  const want = S.me && keptDealerAfter(S.me.id, t.id, hand.hand_no, header.seats.map((e) => e.seat));
  if (want !== null && want !== undefined && header.dealer !== want) {
    return "is dealt by seat " + header.dealer + ", not seat " + want + ", the next after hand " + (hand.hand_no - 1) + "'s dealer (D3)";
  }
  return null;
}

function ruleDiff(shown, sat) {
  const a = shown && typeof shown === "object" ? shown : {};
  const b = sat && typeof sat === "object" ? sat : {};
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return names.filter((k) => a[k] !== b[k]).map((k) => k + " " + a[k] + " for " + b[k]).join(", ");
}

/** May this page sign in this hand: the header lists its key, for this table, hand and rules. */
export function signable(hand) {
  return !!hand.keyOk && !hand.headerWrong;
}

/** From the signed header: do I take part in this hand, at which seat, and is the key it lists for me mine? */
function learnSeat(t, hand, fx) {
  if (!hand.header || !S.me) return;
  const header = hand.header.header;
  const entry = header.seats.find((s) => s.player_id === S.me.id);
  hand.seat = entry ? entry.seat : null;
  hand.keyOk = entry ? !!S.key && entry.player_key === S.key.pub : null;
  hand.listedKey = entry ? entry.player_key : null;
  hand.serverKeyOk = !S.serverKey || header.public_key === S.serverKey;
  hand.headerWrong = entry ? headerWrong(t, hand, header) : null;
  // every header this player is seated in is kept, committed to or not: a refused one is proof (§15)
  if (entry) fx.push({ do: "keep", item: headerItem(hand.header) });
  if (entry && hand.headerWrong && !hand.headerWarned) {
    hand.headerWarned = true;
    fx.push({ do: "headerWrong", hand });
    logLine(t, "Warning: hand " + hand.hand_no + "'s signed header " + hand.headerWrong + ". Nothing is signed in this hand. Keep the header: it is signed proof.", "bad");
  }
  if (entry && !hand.keyOk && !hand.keyWarned) {
    hand.keyWarned = true;
    fx.push({ do: "keyMismatch", hand, listed: entry.player_key });
    logLine(t, "Warning: hand " + hand.hand_no + "'s signed header lists a key for you that is not this browser's. Nothing was committed. Keep the header: it is signed proof.", "bad");
  }
  for (const s of header.seats) hand.picks[s.seat] = hand.picks[s.seat] || [];
}

function onHandPhase(t, m, fx) {
  let hand = t.hand;
  if (!hand || hand.hand_no !== m.hand_no) {
    if (hand && !hand.ended) fx.push({ do: "ended", hand });
    hand = newHand(m.hand_no, m.hand_id);
    t.hand = hand;
    t.selected = null;
  }
  hand.hand_id = m.hand_id;
  hand.phase = m.phase;
  hand.deadline = parseTime(m.deadline);
  hand.records.set(m.record.i, m.record.h);
  hand.newest = Math.max(hand.newest, m.record.i);
  fx.push({ do: "keep", item: m.head });
  if (m.phase === "commit") {
    hand.seatedAtStart = mySeat(t) !== null; // seen as it began: whether the player had a seat then
    hand.header = m.record;
    learnSeat(t, hand, fx);
    const seats = hand.header.header.seats;
    const parts = ["Hand " + m.hand_no + " begins with "];
    seats.forEach((s, k) => {
      const w = who(s.seat);
      parts.push(w.you ? "you" : { name: w.name }, k < seats.length - 1 ? ", " : "");
    });
    parts.push(". The server committed to its seed" + (hand.seat !== null ? "; your seed goes in next." : "."));
    logLine(t, parts, "hand");
    if (hand.seat !== null) fx.push({ do: "commit", hand });
  } else if (m.phase === "reveal") {
    hand.commitments = m.record;
    if (hand.seat !== null) fx.push({ do: "reveal", hand });
  }
}

/** The signed head of an update's record (docs/fairness.md §15): its table, hand,
    record and link, with the server's signature the update carries. */
export function headOf(m) {
  return { purpose: "head", body: { table_id: m.table_id, hand_no: m.hand_no, i: m.i, h: m.h }, sig: m.head_sig };
}

/** The view after an update's changes (docs/api.md, "The view's changes"; the server's
    side is service/views.py). */
export function applyChanges(view, changes) {
  const out = Object.assign({}, view);
  for (const [k, v] of Object.entries(changes || {})) {
    if (k === "open") {
      out.open = view.open.slice(0, v.keep).concat(v.add);
      out.open_faces = view.open_faces.slice(0, v.keep).concat(v.faces);
    } else if (k === "seats") {
      out.seats = view.seats.map((s) => (v[String(s.seat)] ? Object.assign({}, s, v[String(s.seat)]) : s));
    } else if (k === "me") {
      out.me = Object.assign({}, view.me, v);
    } else {
      out[k] = v;
    }
  }
  return out;
}

function onUpdate(t, m, fx) {
  let hand = t.hand;
  if (!hand || hand.hand_no !== m.hand_no) {
    hand = newHand(m.hand_no, null);
    t.hand = hand;
  }
  fx.push({ do: "keep", item: m.head || headOf(m) });
  if (!m.view && hand.view && hand.viewI >= m.i) return; // the snapshot held this record already
  hand.records.set(m.i, m.h);
  hand.newest = Math.max(hand.newest, m.i);
  if (m.view) hand.view = m.view;
  else if (hand.view && hand.viewI === m.i - 1) hand.view = applyChanges(hand.view, m.changes);
  else {
    hand.view = null; // an update was missed: ask for the whole view again
    fx.push({ do: "resync" });
  }
  hand.viewI = hand.view ? m.i : -1;
  saw(t, hand, m.events);
  hand.phase = hand.view && hand.view.phase === "ended" ? "finishing" : "play";
  hand.deadline = parseTime(m.deadline);
  hand.fresh = new Set();
  for (const e of m.events) onEvent(t, hand, e);
  syncArrangement(t, hand);
  if (t.confirm && t.confirm.what !== "leave") t.confirm = null;
  dockResultsIfMyTurn(t, hand);
  fx.push({ do: "suggest" });
}

/** Keep what the player is shown at this record (of the last SHOWN_HANDS hands), and
    the events an update told it there, for the check against the published hand once
    it is verified (evidence.js shownOf, shownDiffers). */
const SHOWN_HANDS = 2;
function saw(t, hand, events) {
  const v = hand.view;
  if (!v || hand.viewI < 3 || !v.open || !v.seats) return;
  let m = t.shown.get(hand.hand_no);
  if (!m) {
    m = new Map();
    t.shown.set(hand.hand_no, m);
    while (t.shown.size > SHOWN_HANDS) t.shown.delete(t.shown.keys().next().value);
  }
  const entry = shownOf(v);
  if (events) entry.events = events;
  m.set(hand.viewI, entry);
}

/** The last hand's results stay open until the player closes them, or until the new
    hand needs the player (their turn): then they become a bar over the table. */
function dockResultsIfMyTurn(t, hand) {
  const v = hand.view;
  const me = v && v.me;
  if (t.resultsMode === "open" && t.results && t.results.hand_no !== hand.hand_no && me && me.status === "playing" && v.phase !== "ended" && v.turn === me.seat) {
    t.resultsMode = "docked";
  }
}

function pick(hand, seat, kind, card) {
  const list = (hand.picks[seat] = hand.picks[seat] || []);
  list.push({ kind, card });
  if (list.length > 8) list.shift();
}

function onEvent(t, hand, e) {
  const mine = e.seat !== null && e.seat !== undefined && e.seat === hand.seat;
  if (e.kind === "draw" && e.source === "open") pick(hand, e.seat, "took", e.card);
  else if (e.kind === "draw" && mine && e.card !== undefined) hand.fresh.add(e.card);
  else if (e.kind === "discard") pick(hand, e.seat, "threw", e.card);
  else if (e.kind === "clock") pick(hand, e.seat, "clock", null);
  else if (e.kind === "drop") pick(hand, e.seat, "dropped", null);
  else if (e.kind === "leave") pick(hand, e.seat, "left", null);
  const line = eventLine(e, { decks: decksOf(t), handNo: hand.hand_no, who });
  if (line) logLine(t, line.parts, line.kind);
}

function onResult(t, m, fx) {
  const hand = t.hand && t.hand.hand_no === m.hand_no ? t.hand : null;
  if (hand) hand.ended = true;
  if (m.void) logLine(t, "Hand " + m.hand_no + " was voided: " + m.void_reason + ". Nobody was charged.", "bad");
  fx.push({ do: "forget", handNo: m.hand_no });
  t.results = { push: m, hand_no: m.hand_no, hand_id: m.hand_id, transcript: null, error: null };
  t.resultsMode = hand && hand.seat !== null ? "open" : "docked"; // a hand watched: a bar, not the panel
  fx.push({ do: "transcript", res: t.results }, { do: "refreshMe" }, { do: "refreshHands" });
}

/** A hand that ended while the page was away (no result push came): its results, from the transcript. */
export function endedAway(t, hand) {
  hand.ended = true;
  if (!hand.hand_id) return null;
  t.results = { push: null, hand_no: hand.hand_no, hand_id: hand.hand_id, transcript: null, error: null };
  t.resultsMode = hand.seat !== null ? "open" : "docked";
  return t.results;
}

// ------------------------------------------------------------------ the arrangement

function arrName(t, hand) {
  return "arr." + S.me.id + "." + t.id + "." + hand.hand_no;
}

/** Keep the person's groups across updates: cards that left go, new cards join the last group. */
export function syncArrangement(t, hand) {
  const me = hand.view && hand.view.me;
  if (!me || !S.me) return;
  if (!hand.arr) {
    const saved = store.getJSON(arrName(t, hand), null);
    hand.arr = Array.isArray(saved) ? saved : bySuit(me.cards, decksOf(t), wildRankOf(hand.view, decksOf(t)));
  }
  const { arr, fresh } = sync(hand.arr, me.cards);
  for (const c of fresh) hand.fresh.add(c);
  hand.arr = arr;
  store.setJSON(arrName(t, hand), arr);
  if (t.selected !== null && !me.cards.includes(t.selected)) t.selected = null;
}

export function setArrangement(t, hand, arr) {
  hand.arr = arr.filter((g) => g.length);
  store.setJSON(arrName(t, hand), hand.arr);
}

export function forgetHand(t, handNo) {
  store.remove("arr." + S.me.id + "." + t.id + "." + handNo);
}

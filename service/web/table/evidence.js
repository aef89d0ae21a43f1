/* The player's evidence (docs/fairness.md §15): every signed object the server sends
   (acks, heads, receipts — kept whatever their purpose, without duplicates), the
   signed header of every hand the player is seated in, and the page's own `player`
   item (its key and seat, signed by that key).  Kept per hand in localStorage, so a
   reload keeps it; the download is exactly an evidence file, a JSON array of
   {purpose, body, sig}. */
import { store } from "./store.js";
import { sign } from "./keys.js";

const R = window.RummyPF;
const KEPT_HANDS = 200;
const PURPOSE = /^[a-z_]{1,32}$/;

function name(playerId, tableId, handNo) {
  return "evidence." + playerId + "." + tableId + "." + handNo;
}

export function evidenceOf(playerId, tableId, handNo) {
  return store.getJSON(name(playerId, tableId, handNo), []);
}

/** Keep a signed item {purpose, body: {table_id, hand_no, …}, sig}; false when it was kept already (or is not one). */
export function keepEvidence(playerId, item) {
  if (!item || typeof item.purpose !== "string" || !PURPOSE.test(item.purpose) || !item.body || typeof item.sig !== "string") return false;
  const body = item.body; // (a header item's body is the header, which names its table and hand too)
  if (typeof body.table_id !== "string" || !Number.isInteger(body.hand_no)) return false;
  const key = name(playerId, body.table_id, body.hand_no);
  const list = store.getJSON(key, []);
  const text = R.canonical(item);
  if (list.some((x) => R.canonical(x) === text)) return false;
  list.push({ purpose: item.purpose, body: item.body, sig: item.sig });
  store.setJSON(key, list);
  const indexName = "evidence-index." + playerId;
  const index = store.getJSON(indexName, []);
  if (!index.includes(key)) {
    index.push(key);
    while (index.length > KEPT_HANDS) store.remove(index.shift());
    store.setJSON(indexName, index);
  }
  return true;
}

/** Forget the evidence this browser kept of one hand (and its place in the index). */
export function forgetEvidence(playerId, tableId, handNo) {
  const key = name(playerId, tableId, handNo);
  store.remove(key);
  const indexName = "evidence-index." + playerId;
  const index = store.getJSON(indexName, []);
  if (index.includes(key)) store.setJSON(indexName, index.filter((k) => k !== key));
}

/** The headers this browser kept of a table's other hands: with a hand's own items
    they hold it to the table's rules, which never change (§15 rule 3, RULES.md D38). */
export function tableHeadersOf(playerId, tableId, handNo) {
  const prefix = name(playerId, tableId, "");
  const out = [];
  for (const key of store.getJSON("evidence-index." + playerId, [])) {
    if (!key.startsWith(prefix) || key === name(playerId, tableId, handNo)) continue;
    for (const x of store.getJSON(key, [])) {
      if (x && x.purpose === "header" && x.body && x.body.table_id === tableId && x.body.hand_no !== handNo) out.push(x);
    }
  }
  return out;
}

/** The table's rules as the server signed them in the kept header of its earliest
    other hand, or null: a table's rules never change (D38), signed word beats what a
    snapshot says, and the earliest, as a header the page refused is kept too. */
export function keptRules(playerId, tableId, handNo) {
  const headers = tableHeadersOf(playerId, tableId, handNo).filter((x) => Number.isInteger(x.body.hand_no));
  if (!headers.length) return null;
  return headers.reduce((a, b) => (b.body.hand_no < a.body.hand_no ? b : a)).body.rules;
}

/** The seat that deals a hand after the kept header of the hand before it, or null
    when the page kept no such header: the button moves to the next of the hand's seats
    after that hand's dealer, wrapping (RULES.md D3). */
export function keptDealerAfter(playerId, tableId, handNo, seats) {
  const before = tableHeadersOf(playerId, tableId, handNo).find((x) => x.body.hand_no === handNo - 1);
  if (!before || !Number.isInteger(before.body.dealer)) return null;
  const order = [...seats].sort((a, b) => a - b);
  return order.find((s) => s > before.body.dealer) ?? order[0];
}

/** §15's header item: the signed header (record 0) the page accepted. */
export function headerItem(record0) {
  return { purpose: "header", body: record0.header, sig: record0.sig };
}

/** §15's player item: this browser's key and the seat it plays, signed by that key. */
export async function playerItem(key, tableId, handNo, seat) {
  const body = { table_id: tableId, hand_no: handNo, seat, player_key: key.pub };
  return { purpose: "player", body, sig: await sign(key, "player", body) };
}

/** How many of a hand's items are of each purpose: {ack: 3, head: 20, …}. */
export function countByPurpose(items) {
  const out = {};
  for (const x of items) out[x.purpose] = (out[x.purpose] || 0) + 1;
  return out;
}

/* §15, "On receipt": the ack of a move this page sent must echo it — its table, hand
   and seat, the move as signed, the record it was signed over, the signature sent —
   answer it the way it was answered, and not be dated before the move was sent (the
   server's clock as the page estimates it, give or take ECHO_SLACK_MS).  A refusal
   whose echo is not the move sent looks justified to anyone else (a signature that
   does not verify, a stale record): only this page can see it.  What does not
   match: [{field, expected, found}], empty when the ack echoes the move. */
export const ECHO_SLACK_MS = 5000;
export function echoFaults(body, sent, outcome) {
  const faults = [];
  const b = body && typeof body === "object" ? body : {};
  for (const f of ["table_id", "hand_no", "seat", "prev", "psig"]) {
    if (b[f] !== sent[f]) faults.push({ field: f, expected: sent[f], found: b[f] });
  }
  let same = false;
  try {
    same = !!b.move && typeof b.move === "object" && R.canonical(b.move) === R.canonical(sent.move);
  } catch (e) {
    same = false; // not JSON data of §2 (a float, say)
  }
  if (!same) faults.push({ field: "move", expected: sent.move, found: b.move });
  if (b.outcome !== outcome) faults.push({ field: "outcome", expected: outcome, found: b.outcome });
  if (!Number.isInteger(b.arrived) || b.arrived < sent.at - ECHO_SLACK_MS) faults.push({ field: "arrived", expected: ">= " + (sent.at - ECHO_SLACK_MS), found: b.arrived });
  return faults;
}

/* §15, "On receipt": a fork.  Each head, ack and receipt names the link `h` of a
   record of its hand (a head and an ack their record `i`; an accepted action's ack
   also the record before it, by its `prev`; a receipt record 0 or 1).  An honest
   server pushes a record only once it is stored, so a record has one link for ever:
   two verified items that name two links for one record prove by themselves that
   the house signed two histories of the hand (verifier/forks.py is the bots'). */
const SEED_RECORD = { commit: 0, reveal: 1 };
export function linksOf(item) {
  const b = item && item.body;
  if (!b || typeof b !== "object" || typeof b.table_id !== "string" || !Number.isInteger(b.hand_no)) return [];
  const said = [];
  if (item.purpose === "head" || item.purpose === "ack") said.push([b.i, b.h]);
  if (item.purpose === "ack" && b.outcome === "accepted") {
    const kind = b.move && typeof b.move === "object" ? b.move.kind : undefined;
    if (Object.prototype.hasOwnProperty.call(SEED_RECORD, kind)) said.push([SEED_RECORD[kind], b.prev]);
    else if (Number.isInteger(b.i)) said.push([b.i - 1, b.prev]);
  }
  if (item.purpose === "receipt" && Object.prototype.hasOwnProperty.call(SEED_RECORD, b.kind)) said.push([SEED_RECORD[b.kind], b.prev]);
  return said.filter(([i, h]) => Number.isInteger(i) && i >= 0 && typeof h === "string").map(([i, h]) => ({ i, h }));
}

/** The fork `item` makes with the items kept before it: {i, expected, found, first, second}, or null. */
export function forkOf(kept, item) {
  const mine = linksOf(item);
  if (!mine.length) return null;
  const b = item.body;
  for (const x of kept) {
    if (!x.body || x.body.table_id !== b.table_id || x.body.hand_no !== b.hand_no) continue;
    for (const had of linksOf(x)) {
      const same = mine.find((l) => l.i === had.i && l.h !== had.h);
      if (same) return { i: had.i, expected: had.h, found: same.h, first: x, second: item };
    }
  }
  return null;
}

/* A hand verified in this browser as soon as its transcript is loaded: every check of
   §14 under the pinned key (or, with none pinned, the key the transcript names), with
   the evidence this page kept for the hand — the browser verifier's own code
   (rummypf/verify*.js), as on /verify.  {ok, check, message, items, applied}. */
export async function verdictOf(transcriptText, key, items, shown, playerId) {
  const V = R.verifyTranscript;
  if (typeof V !== "function") return { ok: false, check: "internal", message: "the verifier is not loaded", items: items.length, applied: 0 };
  try {
    const out = await V(transcriptText, { key: key || null, evidence: items.length ? JSON.stringify(items) : null });
    const ev = (out.summary && out.summary.evidence) || {};
    const f = out.failure;
    const applied = Number.isInteger(ev.checked) ? ev.checked : 0;
    if (f) return { ok: false, check: f.check, message: f.message, items: items.length, applied };
    const wrong = shown ? shownDiffers(out.replay || [], JSON.parse(transcriptText), shown, playerId) : { message: "", compared: 0, heard: 0 };
    if (wrong.message) return { ok: false, check: "shown", message: wrong.message, items: items.length, applied, compared: wrong.compared };
    return { ok: true, check: null, message: "every check passed", items: items.length, applied, compared: wrong.compared, heard: wrong.heard || 0 };
  } catch (e) {
    return { ok: false, check: "internal", message: String((e && e.message) || e), items: items.length, applied: 0 };
  }
}

/* What the page was shown at a record, in the few fields a replay's state also has
   (the player's cards, the open pile, the closed pile's size, each seat's status and
   card count): kept per record while the hand is played (state.js), held against the
   published hand's replay once it verifies.  Views are not signed: a difference proves
   nothing to anyone else, but it tells the player that the house showed a game it did
   not publish (docs/fairness.md §16). */
export function shownOf(view) {
  return {
    cards: view.me ? view.me.cards.slice().sort() : null,
    open: view.open.slice(),
    closed_count: view.closed_count,
    seats: view.seats.map((x) => [x.seat, x.status, x.card_count]).sort((a, b) => a[0] - b[0]),
  };
}

function shownOfState(snap, seat) {
  const seats = Object.keys(snap.seats).map(Number).sort((a, b) => a - b);
  return {
    cards: seat !== null && snap.seats[seat] ? snap.seats[seat].cards.slice().sort() : null,
    open: snap.open.slice(),
    closed_count: snap.closed_count,
    seats: seats.map((x) => [x, snap.seats[x].status, snap.seats[x].cards.length]),
  };
}

/** {message, compared}: the first record whose view as shown (shown: Map i → shownOf)
    is not the replay's (replay: the verifier's steps, each with its record and the
    state after it), or whose events as told (the entry's events, kept with it by
    state.js) are not the published record's as the seat may see them; and how many
    records were compared, and at how many of them the events too (heard). */
export function shownDiffers(replay, transcript, shown, playerId) {
  const after = new Map();
  for (const step of replay) if (step && step.state) after.set(step.record, step.state);
  const entry = transcript.log[0].header.seats.find((x) => x.player_id === playerId);
  const seat = entry ? entry.seat : null;
  let compared = 0, heard = 0;
  for (const i of [...shown.keys()].sort((a, b) => a - b)) {
    const snap = after.get(i);
    if (!snap) continue;
    compared += 1;
    const expected = shownOfState(snap, seat);
    const got = shown.get(i);
    const keys = Object.keys(expected).filter((k) => JSON.stringify(expected[k]) !== JSON.stringify(got[k]));
    if (keys.length) return { message: "record " + i + ": what you were shown is not the published hand (" + keys.join(", ") + ").", compared };
    const record = transcript.log[i];
    if (got.events && record && Array.isArray(record.events)) {
      heard += 1;
      const told = eventsDiffer(got.events, record.events.map((e) => forSeat(e, seat)));
      if (told) return { message: "record " + i + ": the events you were told are not the published hand's (" + told + ").", compared, heard };
    }
  }
  return { message: "", compared, heard };
}

/* An event of the transcript as a seat is told it during play (docs/fairness.md §11):
   its public data, and its private part only when it is the seat's own. */
function forSeat(e, seat) {
  return Object.assign({ kind: e.kind, seat: e.seat }, e.data, seat !== null && e.seat === seat ? e.private : {});
}

function same(a, b) {
  try {
    return R.canonical(a) === R.canonical(b);
  } catch (_) {
    return false; // not canonical JSON (a fraction, say): not the published value
  }
}

/** Where the events told first differ from the published ones, in words ("" if nowhere). */
function eventsDiffer(told, published) {
  if (!Array.isArray(told)) return "what was told is not a list of events";
  for (let j = 0; j < Math.max(told.length, published.length); j++) {
    const a = told[j], b = published[j];
    if (a === undefined || b === undefined) return "told " + told.length + " events, published " + published.length;
    if (same(a, b)) continue;
    if (!a || typeof a !== "object") return "event " + (j + 1) + " told is not an object";
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !same(a[k], b[k])).sort();
    return "event " + (j + 1) + ", " + b.kind + ": differs in " + keys.join(", ");
  }
  return "";
}

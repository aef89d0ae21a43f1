/* The table page: opens the table's socket, hands every message to the state
   (state.update) and carries out what it returns, draws everything again, and wires
   the buttons and keys to the player's moves. */
import { api } from "./api.js";
import { $, download, el } from "./dom.js";
import { TableSocket } from "./connection.js";
import { evidenceOf, tableHeadersOf, verdictOf } from "./evidence.js";
import { best, nudge as nudged } from "./arranging.js";
import { wildRankOf } from "./cardview.js";
import { countOf, suggest, suggestionKey } from "./suggest.js";
import { S, decksOf, endedAway, forgetHand, mySeat, newTable, setArrangement, update } from "./state.js";
import * as moves from "./moves.js";
import { hideError, notice, renderBanner, showError } from "./messages.js";
import { renderActions, renderMineHead, renderPiles, renderSeats, renderSituation } from "./render-table.js";
import { focusCard, renderHand } from "./render-hand.js";
import { renderResults } from "./render-results.js";
import { renderSide } from "./render-side.js";
import { learnTables } from "./lobby.js";
import { refreshMe } from "./signin.js";
import { loadHands } from "./history.js";
import { short } from "./cardview.js";

moves.useUi({ error: showError, notice, render: renderTable, renderActions: () => S.t && renderActions(S.t), hideError });

// ------------------------------------------------------------------ opening and leaving

export function openTable(id) {
  if (S.t && S.t.id === id) {
    renderTable();
    return;
  }
  leaveTablePage();
  const t = newTable(id);
  S.t = t;
  $("where").replaceChildren(el("span", { class: "label" }, "Table "), el("b", null, id), " ", el("a", { href: "#/lobby" }, "back to the lobby"));
  t.sock = new TableSocket({
    tableId: id,
    onSnapshot: (snapshot, how) => receive({ type: "snapshot", snapshot, how }),
    onPush: receive,
    joinArgs: () => (t.hand && t.hand.newest >= 0 ? { since: { hand_no: t.hand.hand_no, i: t.hand.newest } } : {}),
    onState: (state, arg) => receive({ type: "conn", state, arg }),
    signedOut: sessionEnded,
    ticket: async () => (await api("POST", "/api/session/ticket")).ticket,
  });
  t.sock.connect();
  refreshNames();
  renderTable();
}

/** The page's session no longer speaks for this player (false when the server cannot say). */
async function sessionEnded() {
  let s;
  try {
    s = await api("GET", "/api/session");
  } catch (e) {
    return false; // the server is not reachable: that is what the socket found too
  }
  return !s.player || !S.me || s.player.id !== S.me.id;
}

export function leaveTablePage() {
  if (S.t && S.t.sock) S.t.sock.stop();
  S.t = null;
  renderBanner(null);
}

async function refreshNames() {
  try {
    learnTables((await api("GET", "/api/tables")).tables);
    if (S.t) renderTable();
  } catch (e) {
    /* names stay as they are */
  }
}

// ------------------------------------------------------------------ messages in, effects out

/** Every message for the table goes here (the socket's, and the tests' RummyTable.receive). */
export function receive(m) {
  if (!S.t) return;
  const t = S.t;
  const effects = update(m);
  for (const fx of effects) run(t, fx);
  if (S.t === t) renderTable();
}

function run(t, fx) {
  switch (fx.do) {
    case "keep":
      moves.keep(fx.item);
      break;
    case "commit":
      moves.commit(fx.hand);
      break;
    case "reveal":
      moves.reveal(fx.hand);
      break;
    case "ended": {
      const res = endedAway(t, fx.hand);
      moves.forget(t, fx.hand.hand_no);
      forgetHand(t, fx.hand.hand_no);
      if (res) loadTranscript(res).then(refreshMe);
      break;
    }
    case "transcript":
      loadTranscript(fx.res);
      break;
    case "forget":
      moves.forget(t, fx.handNo);
      forgetHand(t, fx.handNo);
      break;
    case "refreshMe":
      refreshMe();
      break;
    case "refreshHands":
      loadHands(historyCtl);
      break;
    case "refreshNames":
      refreshNames();
      break;
    case "notice":
      notice(fx.text);
      break;
    case "error":
      showError(fx.err || fx.error, fx.context);
      break;
    case "keyMismatch":
      showError({ code: "key_mismatch", message: "the header lists key " + fx.listed.slice(0, 16) + "… for you, this browser holds " + S.key.pub.slice(0, 16) + "…" }, "Hand " + fx.hand.hand_no + " does not list your key — the page will not commit a seed or move in it");
      break;
    case "headerWrong":
      showError({ code: "header_mismatch", message: "the signed header " + fx.hand.headerWrong }, "Hand " + fx.hand.hand_no + "'s header is not this table's — the page will not commit a seed or move in it");
      break;
    case "sit":
      moves.sit(fx.seat).then(refreshMe);
      break;
    case "lobby":
      location.hash = "#/lobby";
      break;
    case "suggest":
      scheduleSuggestion();
      break;
    case "resync": // an update was missed: the snapshot brings the whole view and the events since
      if (t.sock) {
        const since = t.hand && t.hand.newest >= 0 ? { since: { hand_no: t.hand.hand_no, i: t.hand.newest } } : {};
        t.sock.send("join", since).then(
          (snapshot) => receive({ type: "snapshot", snapshot, how: {} }),
          () => {},
        );
      }
      break;
  }
}

async function loadTranscript(res) {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const text = await api("GET", "/api/hands/" + res.hand_id + "/transcript", { raw: true });
      res.transcript = JSON.parse(text);
      res.transcriptText = text;
      res.error = null;
      verifyResult(res);
      break;
    } catch (e) {
      res.error = e;
      if (e.code !== "hand_in_progress" && e.code !== "network" && e.code !== "unavailable") break;
      await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
    }
  }
  if (S.t && S.t.results === res) renderTable();
}

/** The hand verified in this browser with the page's own evidence, once its transcript
    is here (§14, §15): the verdict is shown with the results. */
async function verifyResult(res) {
  const t = S.t;
  res.verdict = null;
  const mine = t && t.results === res;
  const shown = mine ? t.shown.get(res.hand_no) : null;
  const items = mine && S.me ? evidenceFor(res.hand_no).concat(tableHeadersOf(S.me.id, t.id, res.hand_no)) : [];
  res.verdict = await verdictOf(res.transcriptText, S.serverKey, items, shown, S.me && S.me.id);
  if (S.t && S.t.results === res) renderTable();
}

// ------------------------------------------------------------------ drawing

const resultsCtl = {
  close: () => setResults("closed"),
  open: () => setResults("open"),
  evidenceCount: (handNo) => evidenceFor(handNo).length,
  downloadEvidence: (handNo) => downloadEvidence(S.t.id, handNo),
  downloadTranscript: (res) => download("transcript-" + S.t.id + "-hand" + res.hand_no + ".json", res.transcriptText),
};

const sideCtl = {
  showResults: () => setResults("open"),
  downloadHeader: (hand) => download("header-" + S.t.id + "-hand" + hand.hand_no + ".json", JSON.stringify(hand.header, null, 1) + "\n"),
  downloadEvidence: (handNo) => downloadEvidence(S.t.id, handNo),
  evidenceOf: (handNo) => evidenceFor(handNo),
};

export const historyCtl = {
  evidenceOf: (tableId, handNo) => (S.me ? evidenceOf(S.me.id, tableId, handNo) : []),
  downloadEvidence: (tableId, handNo) => downloadEvidence(tableId, handNo),
  error: showError,
};

const handCtl = {
  select: (id) => selectCard(id),
  arrange: (arr, card) => arrange(arr, card),
  nudge: (id, dir) => nudge(id, dir),
};

function setResults(mode) {
  if (!S.t) return;
  S.t.resultsMode = mode;
  renderTable();
  if (mode === "closed") {
    const back = $("show-results") || $("turn-status");
    if (back && back.focus) back.focus({ preventScroll: true });
  }
}

export function renderTable() {
  const t = S.t;
  if (!t) return;
  $("table-title").textContent = "Table " + t.id;
  renderBanner(t, () => t.sock.reconnectNow());
  renderSituation(t, () => {
    t.situation = null;
    renderTable();
  });
  renderSeats(t, (seat) => moves.sit(seat).then(refreshMe));
  renderPiles(t);
  renderMineHead(t);
  renderHand(t, handCtl);
  renderSuggestion(t);
  renderActions(t);
  renderResults(t, resultsCtl);
  renderSide(t, sideCtl);
}

function evidenceFor(handNo) {
  return S.t && S.me ? evidenceOf(S.me.id, S.t.id, handNo) : [];
}

function downloadEvidence(tableId, handNo) {
  const items = evidenceOf(S.me.id, tableId, handNo).concat(tableHeadersOf(S.me.id, tableId, handNo));
  download("evidence-" + tableId + "-hand" + handNo + ".json", JSON.stringify(items, null, 1) + "\n");
}

// ------------------------------------------------------------------ the cards

function selectCard(id) {
  const t = S.t;
  t.selected = t.selected === id ? null : id;
  if (t.confirm && t.confirm.what === "declare") t.confirm = null;
  renderTable();
  focusCard(id);
}

function arrange(arr, card) {
  const t = S.t;
  if (!t || !t.hand) return;
  setArrangement(t, t.hand, arr);
  renderTable();
  if (card !== null && card !== undefined) focusCard(card);
}

function nudge(id, dir) {
  const t = S.t;
  const arr = t && t.hand && t.hand.arr ? nudged(t.hand.arr, id, dir) : null;
  if (arr) arrange(arr, id);
}

export function sortHand() {
  const t = S.t;
  const hand = t && t.hand;
  if (!hand || !hand.view || !hand.view.me) return;
  const decks = decksOf(t);
  arrange(best(hand.view.me.cards, decks, hand.view.wild_face, wildRankOf(hand.view, decks)), null);
}

// ------------------------------------------------------------------ the suggestion

let suggestTimer = null;
function scheduleSuggestion() {
  clearTimeout(suggestTimer);
  suggestTimer = setTimeout(() => {
    const t = S.t;
    const hand = t && t.hand;
    if (!hand) return;
    if (!hand.suggestion || hand.suggestion.key !== suggestionKey(hand)) hand.suggestion = suggest(hand, decksOf(t));
    renderSuggestion(t);
  }, 30);
}

function renderSuggestion(t) {
  const hand = t.hand;
  const box = $("suggestion");
  const pts = $("mine-points");
  const s = hand && hand.suggestion;
  if (!s || !hand.view || !hand.view.me || hand.view.phase === "ended" || s.key !== suggestionKey(hand)) {
    box.replaceChildren();
    box.dataset.move = "";
    box.dataset.card = "";
    pts.textContent = "";
    return;
  }
  box.dataset.move = s.move || "";
  box.dataset.card = s.card === null ? "" : String(s.card);
  const decks = decksOf(t);
  box.replaceChildren(...[s.text ? el("span", null, s.text) : null, s.card !== null && t.selected !== s.card ? el("button", { type: "button", class: "link", id: "pick-suggested", on: { click: () => selectCard(s.card) } }, "select " + short(s.card, decks)) : null].filter(Boolean));
  const me = hand.view.me;
  if (me.status === "playing" && me.cards.length === 13) pts.textContent = "Your hand counts " + countOf(me.cards, decks, wildRankOf(hand.view, decks)).points + " points";
  else if (s.points !== null) pts.textContent = "Best after a discard: " + s.points + " points";
  else pts.textContent = s.move === "declare" ? "A valid declare is in your hand" : "";
}

// ------------------------------------------------------------------ the buttons and keys

function confirmOr(what, go) {
  const t = S.t;
  if (t.confirm && t.confirm.what === what && t.confirm.until > Date.now()) {
    t.confirm = null;
    go();
    return;
  }
  t.confirm = { what, until: Date.now() + 6000 };
  renderActions(t);
  setTimeout(() => {
    if (S.t === t && t.confirm && t.confirm.until <= Date.now()) {
      t.confirm = null;
      renderActions(t);
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
  if (countOf(kept, decks, wildRankOf(hand.view, decks)).valid_declare) moves.act("declare", card);
  else confirmOr("declare", () => moves.act("declare", card));
}

export function wireTable() {
  $("btn-draw-closed").addEventListener("click", () => moves.act("draw_closed"));
  $("btn-draw-open").addEventListener("click", () => moves.act("draw_open"));
  $("btn-discard").addEventListener("click", () => S.t && S.t.selected !== null && moves.act("discard", S.t.selected));
  $("btn-declare").addEventListener("click", onDeclare);
  $("btn-drop").addEventListener("click", () => confirmOr("drop", () => moves.act("drop")));
  $("btn-leave").addEventListener("click", () => confirmOr("leave", () => moves.leave().then(refreshMe)));
  $("btn-sort").addEventListener("click", sortHand);
  const withSelected = (fn) => () => {
    const t = S.t;
    if (t && t.hand && t.hand.arr && t.selected !== null) fn(t, t.selected);
  };
  $("btn-new-group").addEventListener("click", withSelected((t, card) => arrange(t.hand.arr.map((g) => g.filter((c) => c !== card)).concat([[card]]), card)));
  $("btn-left").addEventListener("click", withSelected((t, card) => nudge(card, -1)));
  $("btn-right").addEventListener("click", withSelected((t, card) => nudge(card, 1)));
  setInterval(tick, 250);
}

/** The table's keys (C, O, D, S, G, Escape). */
export function onTableKey(e) {
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
    if (S.t && S.t.resultsMode !== "closed") setResults("closed");
    else hideError();
  } else return false;
  return true;
}

/* The clocks count down the server's deadlines (the page's clock corrected by hello's). */
function tick() {
  const now = Date.now() + (S.skew || 0);
  for (const c of document.querySelectorAll(".clock")) {
    const d = Number(c.dataset.deadline);
    const total = Number(c.dataset.total) * 1000;
    if (!d) continue;
    // never more than the whole turn: hello's time reached the page late (the skew
    // misses the message's transit), which a busy server or network makes a second
    const left = Math.max(0, total > 0 ? Math.min(total, d - now) : d - now);
    const bar = c.querySelector(".clock-fill");
    const txt = c.querySelector(".clock-text");
    bar.style.width = total > 0 ? Math.min(100, (100 * left) / total).toFixed(1) + "%" : "100%";
    c.classList.toggle("low", left < 5000);
    txt.textContent = Math.ceil(left / 1000) + " s";
  }
  const t = S.t;
  if (t && t.conn === "lost" && t.sock && t.sock.retryAt) renderBanner(t, () => t.sock.reconnectNow());
}

export { mySeat };

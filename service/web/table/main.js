/* The lobby and table client (served at /).  It signs in once with a player token
   (then an HttpOnly session cookie carries the session), keeps the player's own
   Ed25519 key, lists the tables, sits, commits and reveals the player's seed by
   itself, shows the hand from the player's seat, signs every move, keeps the
   evidence of docs/fairness.md §15, reconnects by itself, and shows each hand's
   result — and every hand under "My hands" — with a link to /verify.  docs/api.md
   is the protocol it talks.  This module routes between the views and starts it all. */
import { $ } from "./dom.js";
import { S, applyChanges, stoodWords } from "./state.js";
import { hideError, notice, showError } from "./messages.js";
import { loadLobby, renderLobby } from "./lobby.js";
import { loadHands } from "./history.js";
import { createPlayer, ready, renderWho, resume, signIn, signOut } from "./signin.js";
import { forgetCards } from "./store.js";
import { evidenceOf, forgetEvidence, verdictOf } from "./evidence.js";
import { api } from "./api.js";
import { historyCtl, leaveTablePage, onTableKey, openTable, receive, renderTable, sortHand, wireTable } from "./table-page.js";
import * as moves from "./moves.js";
import { summarize } from "./render-results.js";
import { eventLine } from "./story.js";

const ui = { error: showError, notice };
let lobbyTimer = null;

function showView(name) {
  for (const v of ["signin", "lobby", "table", "hands"]) $(v + "-view").hidden = v !== name;
  document.body.dataset.view = name;
  for (const a of document.querySelectorAll("#nav a")) a.toggleAttribute("aria-current", a.dataset.view === name);
  if (name !== "lobby") {
    clearInterval(lobbyTimer);
    lobbyTimer = null;
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
  if (m) {
    showView("table");
    openTable(m[1]);
  } else if (location.hash === "#/hands") {
    leaveTablePage();
    showView("hands");
    $("where").textContent = "";
    loadHands(historyCtl);
  } else {
    leaveTablePage();
    showView("lobby");
    $("where").textContent = "";
    loadLobby(showError);
    clearInterval(lobbyTimer);
    lobbyTimer = setInterval(() => loadLobby(showError), 10000);
  }
}

async function start(me) {
  hideError();
  if (!(await ready(me, ui))) return;
  renderWho();
  route();
}

async function onSignIn(e) {
  e.preventDefault();
  const input = $("token-input");
  const token = input.value.trim();
  if (!token) return;
  try {
    const me = await signIn(token);
    input.value = "";
    await start(me);
  } catch (err) {
    showError(err, "Signing in failed");
  }
}

async function onCreate(e) {
  e.preventDefault();
  const token = await createPlayer(ui);
  if (token) {
    try {
      await start(await signIn(token));
    } catch (err) {
      showError(err, "Signing in failed");
    }
  }
}

/** The hands still in play that this browser kept evidence of: as the server lists
    the player's hands (before the session ends), and the hand on the table page. */
async function liveHandsWithEvidence(me) {
  const live = [];
  try {
    for (const h of (await api("GET", "/api/me/hands")).hands || []) {
      if (h.status === "seeding" || h.status === "playing") live.push({ table_id: h.table_id, hand_no: h.hand_no });
    }
  } catch (e) {
    /* the table page's own hand below still counts */
  }
  const t = S.t;
  if (t && t.hand && !t.hand.ended && !live.some((h) => h.table_id === t.id && h.hand_no === t.hand.hand_no)) {
    live.push({ table_id: t.id, hand_no: t.hand.hand_no });
  }
  return live.filter((h) => evidenceOf(me.id, h.table_id, h.hand_no).length > 0);
}

async function onSignOut() {
  const me = S.me;
  const live = me ? await liveHandsWithEvidence(me) : [];
  leaveTablePage();
  await signOut();
  if (me) {
    // The evidence of a hand still in play names cards the player drew (a closed
    // draw's ack: its record's h, one of 106 guesses): the player takes it away as a
    // file, and the next person at this browser cannot read it (the audit h87).
    for (const h of live) {
      historyCtl.downloadEvidence(h.table_id, h.hand_no);
      forgetEvidence(me.id, h.table_id, h.hand_no);
    }
    forgetCards(me.id);
  }
  if (live.length) {
    const which = live.map((h) => "hand " + h.hand_no + " of table " + h.table_id).join(", ");
    notice("Your evidence of " + which + " (still in play) was downloaded and removed from this browser: it names cards you drew.", 15000);
  }
  S.me = null;
  S.key = null;
  S.hands = null;
  renderWho();
  location.hash = "";
  route();
}

function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const tag = document.activeElement ? document.activeElement.tagName : "";
  if (tag === "INPUT" || tag === "TEXTAREA") return;
  if (document.body.dataset.view === "table" && onTableKey(e)) e.preventDefault();
  else if (e.key === "Escape") hideError();
}

async function init() {
  $("signin-form").addEventListener("submit", onSignIn);
  $("create-form").addEventListener("submit", onCreate);
  $("sign-out").addEventListener("click", onSignOut);
  $("alert-close").addEventListener("click", hideError);
  $("notice").addEventListener("click", () => ($("notice").hidden = true));
  $("lobby-refresh").addEventListener("click", () => loadLobby(showError));
  $("hands-refresh").addEventListener("click", () => loadHands(historyCtl));
  wireTable();
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", route);
  try {
    const me = await resume();
    if (me) await start(me);
    else route();
  } catch (e) {
    showError(e, "Reaching the server failed");
    route();
  }
  document.body.dataset.ready = "true";
}

/* For the tests and the curious: the page's own functions (a move sent this way goes
   through exactly the path the buttons take, without their guards). */
window.RummyTable = {
  state: S,
  act: moves.act,
  sortHand,
  dropConnection: () => S.t && S.t.sock && S.t.sock.drop(),
  receive,
  evidence: (handNo) => (S.t && S.me ? evidenceOf(S.me.id, S.t.id, handNo) : []),
  verdictOf,
  summarize,
  eventLine,
  stoodWords,
  applyChanges,
  renderLobby,
  renderTable,
};

init();

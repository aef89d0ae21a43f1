/* A hand's results: every seat, how it ended, its cards, points and tokens, read from
   the published transcript; the links to verify it and to save its evidence.  The
   panel stays until the player closes it, or until the next hand needs them — then
   it becomes a bar over the table, which stays until closed. */
import { $, el, fill, fillIfChanged, ht, nameEl, pct, plural, signed } from "./dom.js";
import { cardsView, orderGroup, sortedIds } from "./cardview.js";
import { explain } from "./api.js";
import { S, nameOf } from "./state.js";

const R = window.RummyPF;
const HOW = { declared: "declared", wrong_declare: "wrong declare", dropped: "dropped", left: "left the table", forfeit: "sat out (withheld the seed)", playing: "counted" };

/** Each seat of a transcript: how it ended, its cards as groups and loose, points and tokens. */
export function summarize(T) {
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

/** The /verify link for a hand: the transcript fetched from this server, the key this browser pinned. */
export function verifyHref(handId) {
  return "/verify?hand=" + encodeURIComponent(handId) + (S.serverKey ? "&key=" + S.serverKey : "");
}

/** {title parts, my delta} of a result, from the transcript when it is in, else from the push. */
function headline(res) {
  const mine = (seats) => (S.me && seats ? seats.find((s) => s.player_id === S.me.id) : null);
  const T = res.transcript;
  const result = T ? T.result : res.push && res.push.result;
  const voided = T ? T.result === null : res.push && res.push.void;
  if (voided) return { parts: ["Hand " + res.hand_no + " was voided"], delta: null };
  if (!result) return { parts: ["Hand " + res.hand_no + " is over"], delta: null };
  const seats = T ? T.log[0].header.seats : null;
  const winner = seats ? seats.find((s) => s.seat === result.winner) : null;
  const me = mine(seats);
  const delta = me ? result.settlement.deltas[String(me.seat)] : null;
  if (!winner) return { parts: ["Hand " + res.hand_no + ": seat " + result.winner + " wins"], delta };
  const you = S.me && winner.player_id === S.me.id;
  return { parts: ["Hand " + res.hand_no + ": ", you ? "you win" : nameEl(nameOf(winner.player_id)), you ? "" : " wins"], delta };
}

/** ctl: {close(), dock(), open(), downloadEvidence(handNo), evidenceCount(handNo), downloadTranscript(res)}. */
export function renderResults(t, ctl) {
  const box = $("results");
  const bar = $("results-bar");
  const res = t.results;
  if (!res || t.resultsMode === "closed") {
    box.hidden = bar.hidden = true;
    fill(box);
    fill(bar);
    return;
  }
  const head = headline(res);
  const won = head.delta !== null && head.delta > 0;
  const deltaEl = head.delta === null ? null : el("b", { class: "delta " + (won ? "plus" : head.delta < 0 ? "minus" : ""), "data-delta": head.delta }, (won ? " · " : " · you ") + signed(head.delta) + " HT");
  const verify = (id) => el("a", { class: "button primary", id, href: verifyHref(res.hand_id), target: "_blank", rel: "noopener" }, "Verify this hand \u2197");
  if (t.resultsMode === "docked") {
    box.hidden = true;
    fill(box);
    bar.hidden = false;
    fillIfChanged(
      bar,
      el("span", { class: "bar-title", id: "results-bar-title" }, ...head.parts, deltaEl),
      el("button", { type: "button", id: "results-show", on: { click: ctl.open } }, "Results"),
      verify("verify-link-bar"),
      el("button", { type: "button", class: "ghost", id: "results-bar-close", "aria-label": "Close the results of hand " + res.hand_no, on: { click: ctl.close } }, "\u2715"),
    );
    return;
  }
  bar.hidden = true;
  fill(bar);
  box.hidden = false;
  const n = ctl.evidenceCount(res.hand_no);
  const tools = el(
    "div",
    { class: "results-tools" },
    verify("verify-link"),
    el("button", { type: "button", id: "download-evidence", on: { click: () => ctl.downloadEvidence(res.hand_no) }, disabled: !n }, "Download evidence (" + plural(n, "item") + ")"),
    res.transcriptText ? el("button", { type: "button", id: "download-transcript", on: { click: () => ctl.downloadTranscript(res) } }, "Download transcript") : null,
    el("button", { type: "button", class: "ghost close", id: "results-close", on: { click: ctl.close } }, "Back to the table"),
  );
  const help = el("p", { class: "small" }, "The verifier replays the whole hand in your browser from the published transcript and the server key this browser pinned. Add your evidence file (the server's signed answers, the header your page accepted, your own key) to check that the transcript is the game you were shown. Every hand stays under “My hands”.");
  const title = el("h2", { id: "results-title", tabindex: "-1" }, ...head.parts, deltaEl);
  if (!res.transcript) {
    const p = res.push;
    fillIfChanged(
      box,
      el("div", { class: "results-head" }, title),
      res.error ? el("p", { class: "bad" }, "The transcript could not be loaded: " + explain(res.error).text) : el("p", { class: "muted" }, "Loading the transcript…"),
      p && p.result ? settlementLine(p.result.settlement) : null,
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
      el("td", { class: "rplayer" }, el("b", null, isMe ? "You" : nameEl(nameOf(row.player_id))), el("div", { class: "small" }, "seat " + row.seat)),
      el("td", { class: "how" }, row.winner ? el("span", { class: "trophy", "aria-hidden": "true" }, "\u2605 ") : null, row.how || "—"),
      cell,
      el("td", { class: "num points", "data-points": row.points === null ? "" : row.points }, row.points === null ? "—" : String(row.points)),
      el("td", { class: "num tokens " + (row.delta > 0 ? "plus" : row.delta < 0 ? "minus" : ""), "data-delta": row.delta === null ? "" : row.delta }, row.delta === null ? "—" : signed(row.delta) + " HT"),
    );
  });
  fillIfChanged(
    box,
    el("div", { class: "results-head" }, title, el("span", { class: "small" }, "hand id " + res.hand_id + " · table " + t.id)),
    sum.void ? el("p", { class: "bad" }, "Nobody was charged. Reason: " + (sum.voidReason || "—")) : null,
    el(
      "table",
      { class: "results-table", id: "results-table" },
      el("thead", null, el("tr", null, el("th", null, "Player"), el("th", null, "How it ended"), el("th", null, "Cards"), el("th", { class: "num" }, "Points"), el("th", { class: "num" }, "Tokens"))),
      el("tbody", null, rows),
    ),
    sum.settlement ? settlementLine(sum.settlement) : null,
    verdictLine(res.verdict),
    tools,
    help,
  );
  if (t.resultsFocused !== res.hand_id) {
    // the hand is over: take the keyboard to its result (Escape closes it)
    t.resultsFocused = res.hand_id;
    $("results-title").focus({ preventScroll: true });
  }
}

/* The hand as verified in this browser when its transcript arrived (table-page.js). */
function verdictLine(v) {
  if (!v) return el("p", { class: "muted", id: "auto-verdict" }, "Verifying this hand in your browser…");
  if (v.ok) {
    const ev = (v.items ? ", with your evidence (" + plural(v.applied, "item") + " checked)" : "") + (v.compared ? "; the table you were shown is the published hand (" + plural(v.compared, "record") + " compared" + (v.heard ? ", the events you were told at " + v.heard + " of them too" : "") + ")" : "");
    return el("p", { class: "ok", id: "auto-verdict", "data-ok": "true" }, "\u2714 Verified in your browser: every check passed" + ev + ".");
  }
  return el("p", { class: "bad", id: "auto-verdict", "data-ok": "false", "data-check": v.check || "" }, "This hand does not verify in your browser (" + (v.check || "?") + "): " + v.message + " Keep your evidence and the transcript.");
}

function settlementLine(st) {
  return el(
    "p",
    { class: "settlement", id: "settlement" },
    "Pot ",
    el("b", null, ht(st.pot)),
    " · house commission ",
    el("b", { id: "commission" }, ht(st.commission)),
    " (" + pct(st.commission_bps) + ") · the winner receives ",
    el("b", null, ht(st.pot - st.commission)),
    " · " + ht(st.point_value) + " a point",
  );
}

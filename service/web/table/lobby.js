/* The lobby: every open table, its stakes, who sits where; Sit, Watch, Back to my seat. */
import { api } from "./api.js";
import { $, el, fill, ht, nameEl, pct } from "./dom.js";
import { S } from "./state.js";

/** Names and settings the table page uses too (names, max_away_hands). */
export function learnTables(tables) {
  for (const t of tables) {
    S.maxAway.set(t.id, t.max_away_hands);
    for (const s of t.seated) S.names.set(s.player_id, s.name);
  }
}

export async function loadLobby(onError) {
  try {
    const data = await api("GET", "/api/tables");
    S.tables = data.tables;
    learnTables(S.tables);
    renderLobby();
  } catch (e) {
    onError(e, "Loading the tables failed");
  }
}

function mySeatAt(tbl) {
  const s = tbl.seated.find((x) => S.me && x.player_id === S.me.id);
  return s ? s.seat : null;
}

export function renderLobby() {
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
        who ? el("span", { class: "seat-who" }, nameEl(who.name), mine === s ? " (you)" : "") : el("span", { class: "seat-who" }, "free"),
      ),
    );
  }
  const go = (sit) => () => {
    if (sit) S.pendingSit = { tableId: tbl.id, seat: null };
    location.hash = "#/table/" + tbl.id;
  };
  const primary =
    mine !== null
      ? el("button", { type: "button", class: "primary", on: { click: go(false) } }, "Back to my seat")
      : el("button", { type: "button", class: "primary", disabled: full || short || closing, on: { click: go(true) } }, closing ? "Closing" : full ? "Full" : "Sit");
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

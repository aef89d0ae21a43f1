/* Drawing the felt: the other seats, the piles, what the hand waits for, the player's
   own header line and move buttons, and the situation box (why the seat is gone…). */
import { $, el, fill, fillEach, ht, nameEl, partsNodes, plural } from "./dom.js";
import { cardView, short, wildRankOf } from "./cardview.js";
import { S, decksOf, mySeat, nameOf, signable, who } from "./state.js";

const R = window.RummyPF;
export const STATUS = { playing: "playing", declared: "declared", wrong_declare: "wrong declare", dropped: "dropped", left: "left", forfeit: "sat out" };

function seatEntry(hand, seat) {
  return hand && hand.view ? hand.view.seats.find((s) => s.seat === seat) : null;
}

/** The clock bar; the page's ticker fills it from data-deadline. */
export function clockBar(deadline, total) {
  return el("div", { class: "clock", "data-deadline": deadline || "", "data-total": total }, el("div", { class: "clock-fill" }), el("span", { class: "clock-text" }, ""));
}

export function renderSeats(t, onSit) {
  const box = $("seats");
  if (!t.rules) {
    fill(box);
    return;
  }
  const hand = t.hand;
  const decks = decksOf(t);
  const wr = hand ? wildRankOf(hand.view, decks) : null;
  // a hand over whose seat the player no longer holds (stood up, D31, D34): free seats are offered again
  const mine = hand && hand.seat !== null && !(hand.ended && mySeat(t) === null) ? hand.seat : mySeat(t);
  const boxes = [];
  const n = t.rules.seats;
  const start = mine === null ? 0 : mine + 1;
  for (let k = 0; k < n; k++) {
    const seat = (start + k) % n;
    if (seat === mine) continue;
    const pid = t.seats[String(seat)];
    const inHand = hand && hand.header ? hand.header.header.seats.find((s) => s.seat === seat) : null;
    const entry = seatEntry(hand, seat);
    if (!pid && !inHand) {
      const free = mine === null && t.conn === "open" && !t.busy && t.status === "open"; // closing or closed: a sit is refused (table_closed)
      boxes.push(
        el(
          "div",
          { class: "seat free", "data-seat": seat },
          el("div", { class: "seat-name" }, "Seat " + seat),
          free ? el("button", { type: "button", class: "sit-here", "data-seat": seat, on: { click: () => onSit(seat) } }, "Sit here") : el("div", { class: "seat-meta" }, "free"),
        ),
      );
      continue;
    }
    const playerId = inHand ? inHand.player_id : pid;
    const v = hand && hand.view;
    const onTurn = v && v.phase !== "ended" && v.turn === seat && entry && entry.status === "playing";
    const status = entry ? entry.status : inHand ? (hand.phase === "commit" || hand.phase === "reveal" ? "seeding" : "in hand") : "waiting";
    const count = entry ? entry.card_count : 0;
    const picks = (hand && hand.picks[seat]) || [];
    boxes.push(
      el(
        "div",
        { class: "seat" + (onTurn ? " on-turn" : "") + " st-" + status.replace(/ /g, "-"), "data-seat": seat, "data-status": status },
        el(
          "div",
          { class: "seat-name" },
          el("b", null, nameEl(nameOf(playerId))),
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
        entry && count ? el("div", { class: "fan", "aria-hidden": "true" }, Array.from({ length: Math.min(count, 14) }, () => el("span", { class: "back" }))) : null,
        el(
          "div",
          { class: "picks", role: "group", "aria-label": "public moves" },
          picks.slice(-5).map((p) =>
            p.card !== null && p.card !== undefined
              ? el("span", { class: "pick " + p.kind, title: p.kind === "took" ? "took from the open pile" : "discarded" }, el("span", { class: "pick-label" }, p.kind === "took" ? "took" : "threw"), cardView(p.card, decks, wr, "tiny"))
              : el("span", { class: "pick " + p.kind }, p.kind),
          ),
        ),
        onTurn ? clockBar(hand.deadline, t.rules.turn_seconds) : null,
      ),
    );
  }
  fillEach(box, ...boxes); // a free seat's box, unchanged, keeps its "Sit here" under a click
}

export function renderPiles(t) {
  const box = $("piles");
  const hand = t.hand;
  const v = hand && hand.view;
  if (!v) {
    fill(box);
    return;
  }
  const decks = decksOf(t);
  const wr = wildRankOf(v, decks);
  const top = v.open.length ? v.open[v.open.length - 1] : null;
  const wildText = wr === null ? "only printed jokers are wild" : "wild: every " + (R.cards.RANKS[wr] === "T" ? "10" : R.cards.RANKS[wr]) + " and the jokers";
  fill(
    box,
    el("div", { class: "pile", id: "closed-pile" }, el("div", { class: "pile-label" }, "Closed pile"), el("span", { class: "card back big", role: "img", "aria-label": plural(v.closed_count, "card") + " in the closed pile" }, el("b", { id: "closed-count" }, String(v.closed_count))), el("div", { class: "pile-note" }, v.reshuffles ? "reshuffled " + v.reshuffles + "×" : plural(v.closed_count, "card"))),
    el("div", { class: "pile", id: "open-pile" }, el("div", { class: "pile-label" }, "Open pile"), top === null ? el("span", { class: "card empty big" }, "empty") : cardView(top, decks, wr, "big"), el("div", { class: "pile-note" }, plural(v.open.length, "card"))),
    el("div", { class: "pile", id: "wild-pile" }, el("div", { class: "pile-label" }, "Wild card"), cardView(v.wild_indicator, decks, wr, "big"), el("div", { class: "pile-note wild-note" }, wildText)),
  );
}

/** Why a seated player is not in the hand being played. */
function sitOutReason(t, hand) {
  const hold = t.rules ? 130 * t.rules.point_value : 0;
  if (S.me && S.me.available < hold && !S.me.held) return "your available balance (" + ht(S.me.available) + ") is below the hold of " + ht(hold) + " (rule D20)";
  if (t.satDuring === hand.hand_no || hand.seatedAtStart === false) return "you sat down after it was dealt; you play from the next hand";
  if (hand.seatedAtStart === true) return "you could not be dealt in (rule D20: the hold of " + ht(hold) + " could not be taken); you play from the next hand you can cover";
  return "you sat down after it was dealt, or this page had no connection to the table then (rule D34); you play from the next hand";
}

/** What the table waits for, in one line (parts: strings and {name}). */
export function turnParts(t, hand) {
  if (!t.rules) return [];
  if (t.paused) return ["The table is paused."];
  if (!hand) {
    const seated = Object.keys(t.seats).length;
    return ["Waiting for the next hand — it starts when " + t.rules.min_players + " seated players are connected (" + seated + " seated)."];
  }
  if (hand.phase === "commit") return ["Hand " + hand.hand_no + ": collecting every player's seed commitment" + (hand.seat !== null ? (hand.committed ? " — yours is in." : " — sending yours…") : ".")];
  if (hand.phase === "reveal") return ["Hand " + hand.hand_no + ": seeds are being revealed" + (hand.seat !== null ? (hand.revealed ? " — yours is in." : " — revealing yours…") : ".")];
  if (hand.phase === "deal") return ["Dealing…"];
  const v = hand.view;
  if (!v) return [];
  if (v.phase === "ended" || hand.ended) return ["Hand " + hand.hand_no + " is over."];
  const me = v.me;
  const on = who(v.turn);
  if (me && me.status !== "playing") return ["You are out of this hand (" + (STATUS[me.status] || me.status) + "). ", on.you ? "You" : { name: on.name }, " " + (on.you ? "are" : "is") + " playing."];
  if (me && v.turn === me.seat) return [v.phase === "draw" ? "Your turn: draw a card — closed pile or open pile." : "Your turn: discard a card, or declare."];
  return [{ name: on.name }, "'s turn" + (v.phase === "discard" ? " (drew, now discarding)." : ".")];
}

export function renderMineHead(t) {
  const hand = t.hand;
  const v = hand && hand.view;
  const me = v && v.me;
  const status = $("turn-status");
  fill(status, ...partsNodes(turnParts(t, hand)));
  status.dataset.myTurn = String(!!(me && v.turn === me.seat && v.phase !== "ended" && me.status === "playing"));
  const seat = hand && hand.seat !== null ? hand.seat : mySeat(t);
  const title = $("mine-title");
  const clock = $("mine-clock");
  fill(clock);
  if (seat === null) {
    fill(title, el("b", null, "You are watching"), el("span", { class: "muted" }, t.rules ? " — pick a free seat to play." : ""));
  } else {
    const entry = seatEntry(hand, seat);
    fill(title, el("b", null, nameEl(S.me.name)), el("span", { class: "muted" }, " · seat " + seat), entry && entry.points !== null && entry.status !== "playing" ? el("span", { class: "pts" }, " · " + entry.points + " points") : null);
    if (me && v.phase !== "ended" && v.turn === me.seat && me.status === "playing") clock.append(clockBar(hand.deadline, t.rules.turn_seconds));
    else if (hand && hand.header && (hand.phase === "commit" || hand.phase === "reveal")) {
      const h = hand.header.header;
      clock.append(clockBar(hand.deadline, (hand.phase === "commit" ? h.commit_ms : h.reveal_ms) / 1000));
    }
  }
}

/** The message in place of the cards, when the player has none to show. */
export function handMessage(t, hand) {
  const me = hand && hand.view && hand.view.me;
  if (!hand) return "";
  if (hand.seat === null) return mySeat(t) !== null ? "You sit this hand out: " + sitOutReason(t, hand) + "." : "";
  if (me && me.status !== "playing") return "Your cards are out of play.";
  if (hand.phase === "commit" || hand.phase === "reveal") return "Shuffling: your cards come when every seed is in.";
  return "";
}

/** Why the player's seat is gone, or the table closed: until the player dismisses it or sits again. */
export function renderSituation(t, dismiss) {
  const box = $("situation");
  const s = t.situation;
  if (!s) {
    box.hidden = true;
    fill(box);
    return;
  }
  box.hidden = false;
  box.dataset.kind = s.kind;
  fill(box, el("p", { id: "situation-text" }, ...partsNodes(s.parts)), el("button", { type: "button", class: "ghost", id: "situation-close", on: { click: dismiss } }, "OK"));
}

export function renderActions(t) {
  const hand = t.hand;
  const v = hand && hand.view;
  const me = v && v.me;
  const decks = decksOf(t);
  const live = t.conn === "open" && !t.paused && !t.busy;
  const mine = !!(live && me && me.status === "playing" && v.phase !== "ended" && v.turn === me.seat && signable(hand));
  const drawPhase = mine && v.phase === "draw";
  const discardPhase = mine && v.phase === "discard";
  const sel = t.selected;
  const top = v && v.open.length ? v.open[v.open.length - 1] : null;
  const set = (id, enabled, label) => {
    const b = $(id);
    b.disabled = !enabled;
    if (label !== undefined) b.textContent = label;
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
  const seated = mySeat(t) !== null;
  const leaveB = $("btn-leave");
  leaveB.disabled = !(t.conn === "open" && !t.busy && seated);
  const inHand = hand && hand.seat !== null && !hand.ended && (!me || me.status === "playing");
  leaveB.textContent = confirm === "leave" ? (inHand ? "Confirm: leave (40 points)" : "Confirm: leave") : "Leave";
  leaveB.classList.toggle("confirming", confirm === "leave");
  const haveCards = !!(me && me.status === "playing" && hand.arr && v.phase !== "ended");
  $("btn-sort").disabled = !haveCards;
  $("btn-new-group").disabled = !(haveCards && sel !== null);
  $("btn-left").disabled = !(haveCards && sel !== null);
  $("btn-right").disabled = !(haveCards && sel !== null);
  $("arrange-tools").hidden = !haveCards;
  $("actions").hidden = !seated && !(hand && hand.seat !== null);
}

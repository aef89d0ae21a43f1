/* The player's moves, signed in this browser (docs/fairness.md §5, §9) and sent over
   the table's socket: the seed's commitment and reveal (by themselves), the actions
   the buttons make, sitting and leaving.  Every signed object the server answers
   with is kept as evidence (§15), and so is the header of each hand it is seated in;
   each ack is checked against the move sent (§15, "On receipt"), and a move refused
   under an ack that does not echo it is sent again. */
import { ServerError } from "./api.js";
import { signedItems } from "./connection.js";
import { ht } from "./dom.js";
import { echoFaults, evidenceOf, forkOf, keepEvidence, playerItem } from "./evidence.js";
import { moveBody, serverSigned, sign } from "./keys.js";
import { S, logLine, mySeat, signable } from "./state.js";
import { forgetSeed, knownSeed, seedFor } from "./store.js";

const R = window.RummyPF;

/* What the moves tell the person, and how the page is drawn again: set by the page. */
const ui = { error: () => {}, notice: () => {}, render: () => {}, renderActions: () => {}, hideError: () => {} };
export function useUi(fns) {
  Object.assign(ui, fns);
}

// ------------------------------------------------------------------ evidence

/** The key a server item of `body`'s hand is signed with: the header's of the hand
    shown (§15.2; a header naming a key other than the pinned one is flagged apart,
    hand.serverKeyOk), else the pinned key. */
function keyFor(body) {
  const hand = S.t && S.t.hand;
  const header = hand && hand.header && hand.header.header;
  if (header && body && body.table_id === header.table_id && body.hand_no === header.hand_no) return header.public_key;
  return S.serverKey;
}

/** Keep a signed item from the server as evidence once it verifies under its hand's
    key; one that does not is said so and not kept: it proves nothing, and one such
    item would make the whole evidence file fail (§15.2). */
export function keep(item) {
  if (!item || !S.me) return Promise.resolve(false);
  const me = S.me.id;
  const key = item.purpose === "player" ? null : keyFor(item.body);
  if (!key) return Promise.resolve(keepEvidence(me, item));
  const t = S.t;
  const hand = t && t.hand;
  return serverSigned(key, item).then((ok) => {
    if (ok) {
      const fork = forkOf(evidenceOf(me, item.body.table_id, item.body.hand_no), item);
      if (fork && hand && S.t === t && hand.hand_no === item.body.hand_no) {
        hand.fork = "record " + fork.i + ": a " + fork.first.purpose + " names " + fork.expected.slice(0, 12) + "…, a " + fork.second.purpose + " " + fork.found.slice(0, 12) + "…";
        logLine(t, "Warning: the server signed two different records " + fork.i + " of hand " + item.body.hand_no + " (a fork). Both are kept: together they prove it. Keep your evidence.", "bad");
        ui.render();
      }
      return keepEvidence(me, item);
    }
    if (hand && S.t === t) {
      hand.badSig = item.purpose + " " + (item.body && item.body.i !== undefined ? "of record " + item.body.i : (item.body && item.body.kind) || "");
      logLine(t, "Warning: a " + hand.badSig + " from the server does not verify with its hand's key. It is not kept as evidence.", "bad");
      ui.render();
    }
    return false;
  });
}

// ------------------------------------------------------------------ seeds (§5)

export async function commit(hand) {
  const t = S.t;
  if (!t || hand.committed || hand.working || hand.seat === null || hand.ended) return;
  if (!signable(hand)) return; // the header lists another key, or is not this table's hand or rules: the person was warned
  hand.working = true;
  try {
    // its own key and seat: evidence (§15; the header was kept as it was shown, state.js learnSeat)
    keep(await playerItem(S.key, t.id, hand.hand_no, hand.seat));
    const seed = seedFor(S.me.id, t.id, hand.hand_no);
    const value = await R.fairness.playerCommit(hand.seat, seed);
    const move = { kind: "commit", seat: hand.seat, commit: value };
    const sig = await sign(S.key, "move", moveBody(t.id, hand.hand_no, hand.header.h, move));
    await sendEchoed(t, "commit", { hand_no: hand.hand_no, commit: value, sig }, sentMove(t, hand.hand_no, move, hand.header.h, sig));
    hand.committed = true;
    logLine(t, "Your seed is committed (the server's signed answer is kept).", "me");
  } catch (e) {
    keepRefusal(e);
    if (e.code === "already_committed") hand.committed = true;
    ui.error(e, "Committing your seed failed");
  } finally {
    hand.working = false;
    ui.render();
  }
}

export async function reveal(hand) {
  const t = S.t;
  if (!t || hand.revealed || hand.working || hand.seat === null || !hand.commitments || hand.ended) return;
  if (!signable(hand)) return;
  const entry = hand.commitments.commitments.commits.find((c) => c.seat === hand.seat);
  if (!entry || !entry.commit) {
    logLine(t, "Your seed was not committed in time: you play this hand with the empty seed (D21).", "bad");
    return;
  }
  const seed = knownSeed(S.me.id, t.id, hand.hand_no);
  if (!seed) {
    ui.error(new ServerError("seed_lost", "this browser no longer holds the seed it committed for hand " + hand.hand_no), "Your seed cannot be revealed — you will sit this hand out and pay a first drop (D29)");
    return;
  }
  if ((await R.fairness.playerCommit(hand.seat, seed)) !== entry.commit) {
    ui.error(new ServerError("commit_mismatch", "the signed commitment list shows " + entry.commit.slice(0, 16) + "… for your seat"), "The commitment the server lists for you is not the one this browser made — nothing was revealed. Keep the evidence");
    return;
  }
  hand.working = true;
  try {
    const move = { kind: "reveal", seat: hand.seat, seed };
    const sig = await sign(S.key, "move", moveBody(t.id, hand.hand_no, hand.commitments.h, move));
    await sendEchoed(t, "reveal", { hand_no: hand.hand_no, seed, sig }, sentMove(t, hand.hand_no, move, hand.commitments.h, sig));
    hand.revealed = true;
    logLine(t, "Your seed is revealed (the server's answer is kept). The deck is now fixed by every seed.", "me");
  } catch (e) {
    keepRefusal(e);
    if (e.code === "already_revealed") hand.revealed = true;
    ui.error(e, "Revealing your seed failed");
  } finally {
    hand.working = false;
    ui.render();
  }
}

/* Send a commit or a reveal; sent once more when its refusal does not echo it. */
async function sendEchoed(t, type, fields, sent) {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await t.sock.send(type, fields);
      keepAll(res);
      await echoed(signedItems(res), sent, "accepted");
      return res;
    } catch (e) {
      keepRefusal(e);
      if (!(await echoed(e.signed, sent, "refused")) && attempt === 0) continue;
      throw e;
    }
  }
}

export function forget(t, handNo) {
  forgetSeed(S.me.id, t.id, handNo);
}

/* Whatever signed items a reply carries (a receipt, a head, an ack), or a refusal
   (its ack): all evidence. */
function keepAll(res) {
  for (const item of signedItems(res)) keep(item);
}

function keepRefusal(e) {
  for (const item of (e && e.signed) || []) keep(item);
}

const MOVE_NOUN = { commit: "commitment", reveal: "seed", draw_closed: "draw", draw_open: "draw from the open pile", discard: "discard", declare: "declaration", drop: "drop", leave: "leave" };

/* A signed move as sent, for its ack to echo (§15, "On receipt"); `at` is the server's
   clock as this page estimates it (hello's time). */
function sentMove(t, handNo, move, prev, sig) {
  return { table_id: t.id, hand_no: handNo, seat: move.seat, move, prev, psig: sig, at: Date.now() + S.skew };
}

/* Whether the ack among `items` (a reply's or a refusal's signed items) echoes the
   move sent, under a signature that verifies (an ack that does not verify proves no
   refusal); one that does not is said so, in the table's log and on the hand (the ack
   itself is kept as evidence if it verifies, as every item is). */
async function echoed(items, sent, outcome) {
  const ack = (items || []).find((x) => x && x.purpose === "ack");
  if (!ack) return true;
  const faults = echoFaults(ack.body, sent, outcome);
  const key = keyFor(ack.body);
  if (key && !(await serverSigned(key, ack))) faults.push({ field: "sig", expected: "the server's", found: ack.sig });
  if (!faults.length) return true;
  const t = S.t;
  const fields = faults.map((f) => f.field).join(", ");
  if (t && t.hand && t.hand.hand_no === sent.hand_no) t.hand.badAck = fields;
  logLine(
    t,
    "Warning: the server's signed answer to your " + (MOVE_NOUN[sent.move.kind] || sent.move.kind) + " does not name the move you sent (" + fields + ")" +
      (outcome === "refused" ? ": what it refused is not your move. The page sends your move again." : "."),
    "bad",
  );
  return false;
}

// ------------------------------------------------------------------ actions (§9)

function newestHead(hand) {
  return hand.records.get(hand.newest);
}

export function moveName(kind) {
  return { draw_closed: "Drawing", draw_open: "Taking the open card", discard: "Discarding", declare: "Declaring", drop: "Dropping" }[kind] || kind;
}

/** Why the page signs nothing in this hand, as an error to show. */
function refusedHeader(hand) {
  if (!hand.keyOk) return new ServerError("key_mismatch", "this hand lists another key for you");
  return new ServerError("header_mismatch", "this hand's signed header " + hand.headerWrong);
}

/** Sign and send an action: {kind} or {kind, card} (a declare also sends the arrangement as its hint). */
export async function act(kind, card) {
  const t = S.t;
  const hand = t && t.hand;
  if (!hand || hand.seat === null || !hand.view) {
    ui.error(new ServerError("not_in_hand", "the page has no hand of yours to move in"));
    return false;
  }
  if (!signable(hand)) {
    ui.error(refusedHeader(hand), "The page does not move in this hand");
    return false;
  }
  const action = { kind };
  if (card !== undefined && card !== null) action.card = card;
  if (kind === "declare" && hand.arr) action.hint = hand.arr.map((g) => g.filter((c) => c !== card)).filter((g) => g.length);
  t.busy = true;
  t.confirm = null;
  ui.hideError();
  ui.renderActions();
  try {
    for (let attempt = 0; ; attempt++) {
      const prev = newestHead(hand);
      const move = Object.assign({}, action, { seat: hand.seat });
      const sig = await sign(S.key, "move", moveBody(t.id, hand.hand_no, prev, move));
      const sent = sentMove(t, hand.hand_no, move, prev, sig);
      try {
        const res = await t.sock.send("action", { hand_no: hand.hand_no, action, prev, sig });
        keepAll(res);
        await echoed(signedItems(res), sent, "accepted");
        if (kind === "discard" || kind === "declare" || kind === "drop") t.selected = null;
        return true;
      } catch (e) {
        keepRefusal(e);
        const honest = await echoed(e.signed, sent, "refused");
        const v = hand.view;
        const stillMine = v && v.turn === hand.seat && v.phase !== "ended";
        if (!honest && attempt < 2 && stillMine) continue; // the refusal was not of this move: send it again
        if (e.code === "stale_head" && attempt === 0 && stillMine && newestHead(hand) !== prev) continue; // sign again over the newest record
        ui.error(e, moveName(kind));
        return false;
      }
    }
  } catch (e) {
    ui.error(e, moveName(kind));
    return false;
  } finally {
    t.busy = false;
    ui.render();
  }
}

export async function sit(seat) {
  const t = S.t;
  try {
    const fields = seat === null || seat === undefined ? {} : { seat };
    const res = await t.sock.send("sit", fields);
    t.situation = null;
    if (t.hand && !t.hand.ended) t.satDuring = t.hand.hand_no;
    logLine(t, "You sat down at seat " + res.seat + ". " + ht(t.rules ? t.rules.point_value * 130 : 0) + " will be held while each hand is played.", "me");
    return true;
  } catch (e) {
    ui.error(e, "Sitting down failed");
    return false;
  } finally {
    ui.render();
  }
}

export async function leave() {
  const t = S.t;
  const hand = t.hand;
  const fields = {};
  const me = hand && hand.view && hand.view.me;
  const inHand = hand && hand.seat !== null && !hand.ended && (!me || me.status === "playing");
  if (inHand && !signable(hand)) {
    ui.error(refusedHeader(hand), "The page cannot sign your leave in this hand; you can leave when it is over");
    return false;
  }
  // Before the deal a leave is not a move of the hand (D36): it goes unsigned, and the
  // seat is stood up when the hand ends; a server from before D36 asks for the
  // signature (signature_required), and gets it.
  const dealt = !!(hand && hand.view);
  let sent = null;
  const signed = async () => {
    const prev = newestHead(hand);
    const move = { kind: "leave", seat: hand.seat };
    const sig = await sign(S.key, "move", moveBody(t.id, hand.hand_no, prev, move));
    sent = sentMove(t, hand.hand_no, move, prev, sig);
    return { hand_no: hand.hand_no, prev, sig };
  };
  if (inHand && dealt) Object.assign(fields, await signed());
  t.busy = true;
  t.confirm = null;
  t.leaving = true;
  ui.renderActions();
  try {
    let res;
    try {
      res = await t.sock.send("leave", fields);
    } catch (e) {
      if (!(inHand && !dealt && e.code === "signature_required")) throw e;
      res = await t.sock.send("leave", await signed());
    }
    keepAll(res);
    if (sent) await echoed(signedItems(res), sent, "accepted");
    if (res.voided) {
      // D36: the leave reached the table while the hand's deal was being written: the hand is voided
      logLine(t, "You left seat " + res.left + " while the next hand was being dealt: the house voids that hand and deals again without you; nothing is charged (rule D36).", "me");
      ui.notice("You left the table. You are watching now.");
    } else if (res.after_hand) {
      // D36: before the deal the seat stays in the hand, and stands up when it ends
      t.leftAfterHand = hand.hand_no;
      logLine(t, "You left seat " + res.left + " before the deal: the seat stays in hand " + hand.hand_no + " — its seed missed, then the clock playing for it — and is stood up when the hand ends (rule D36).", "me");
      ui.notice("You left: your seat is stood up when this hand ends.");
    } else {
      logLine(t, "You left seat " + res.left + (res.charged ? " — charged 40 points for leaving during a hand (D15)." : "."), "me");
      ui.notice("You left the table. You are watching now.");
    }
    return true;
  } catch (e) {
    keepRefusal(e);
    if (sent) await echoed(e.signed, sent, "refused");
    ui.error(e, "Leaving failed");
    return false;
  } finally {
    t.busy = false;
    t.leaving = false;
    ui.render();
  }
}

export { mySeat };

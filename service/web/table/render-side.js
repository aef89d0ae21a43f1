/* The column beside the felt: the table's stakes and connection, the hand's checks
   and the keys (the server key fingerprint in the one form every page and command
   uses), the log, and the evidence kept for the hand. */
import { $, el, fill, fingerprintText, ht, partsNodes, pct, plural } from "./dom.js";
import { S } from "./state.js";
import { countByPurpose } from "./evidence.js";

const CONN = { open: "connected", connecting: "connecting…", lost: "reconnecting…", replaced: "open in another window", gone: "gone", refused: "refused, trying again…" };

function connLine(t) {
  const text = CONN[t.conn] || t.conn;
  return el("p", { class: "conn conn-" + t.conn, id: "conn-state", "data-state": t.conn }, el("span", { class: "dot", "aria-hidden": "true" }), text + (t.paused ? " · paused" : "") + (t.goingDown ? " · the server is going down" : ""));
}

/** ctl: {showResults(), downloadHeader(hand), downloadEvidence(handNo), evidenceOf(handNo)}. */
export function renderSide(t, ctl) {
  const info = $("table-info");
  const title = el("h2", null, "Table ", el("span", { class: "tid" }, t.id));
  if (t.rules) {
    const r = t.rules;
    fill(
      info,
      title,
      el("p", { class: "stakes-line" }, ht(r.point_value) + " a point · hold " + ht(130 * r.point_value) + " · commission " + pct(r.commission_bps)),
      el("p", { class: "small" }, r.seats + " seats · " + r.turn_seconds + " s a turn · dropped after " + r.max_missed_turns + " missed turns"),
      connLine(t),
    );
  } else fill(info, title, connLine(t));
  renderHandInfo(t, ctl);
  renderLog(t);
  renderEvidenceBox(t, ctl);
}

/** "server key fingerprint: 3f2a 9c01 …" (and the same for the player's own key). */
export function fingerprintLine(label, fp, id, note) {
  return el("p", { class: "small key-line" }, el("span", { class: "label" }, label + ": "), el("code", { id, class: "fingerprint" }, fingerprintText(fp)), note || null);
}

function renderHandInfo(t, ctl) {
  const box = $("hand-info");
  const hand = t.hand;
  const items = [];
  if (!hand) items.push(el("p", { class: "small" }, "No hand in progress."));
  else {
    items.push(el("p", null, el("b", null, "Hand " + hand.hand_no), hand.hand_id ? el("span", { class: "small" }, " · id " + hand.hand_id) : null, hand.view && hand.view.turn_no ? el("span", { class: "small" }, " · turn " + hand.view.turn_no) : null));
    if (hand.seat !== null) {
      items.push(
        el(
          "ul",
          { class: "checks" },
          el("li", { class: hand.keyOk ? "ok" : "bad", id: "key-check" }, hand.keyOk ? "The signed header lists your key" : "The header lists another key for you — nothing is signed in this hand"),
          hand.headerWrong ? el("li", { class: "bad", id: "header-check" }, "The signed header " + hand.headerWrong + " — nothing is signed in this hand") : null,
          el("li", { class: hand.committed ? "ok" : "wait" }, hand.committed ? "Your seed is committed" : "Seed not committed yet"),
          el("li", { class: hand.revealed ? "ok" : "wait" }, hand.revealed ? "Your seed is revealed" : "Seed not revealed yet"),
          hand.serverKeyOk === false ? el("li", { class: "bad" }, "The header names a server key you have not pinned") : null,
          hand.badSig ? el("li", { class: "bad" }, "A server signature did not verify (" + hand.badSig + ")") : null,
          hand.badAck ? el("li", { class: "bad", id: "ack-check" }, "A signed answer of the server did not name the move you sent (" + hand.badAck + ")") : null,
          hand.fork ? el("li", { class: "bad", id: "fork-check" }, "The server signed two histories of this hand (" + hand.fork + "); your evidence proves it") : null,
        ),
        (hand.keyOk === false || hand.headerWrong) && hand.header ? el("button", { type: "button", id: "download-header", on: { click: () => ctl.downloadHeader(hand) } }, "Download the signed header (your proof)") : null,
      );
    } else items.push(el("p", { class: "small" }, "You do not play in this hand."));
  }
  if (S.serverKey) {
    const changed = S.servedKey && S.servedKey !== S.serverKey;
    items.push(fingerprintLine("server key fingerprint", S.serverFingerprint, "server-fingerprint", changed ? el("span", { class: "bad" }, " — the server now publishes another key!") : el("span", null, " (pinned in this browser)")));
  }
  if (S.key) items.push(fingerprintLine("your key fingerprint", S.key.fingerprint, "my-fingerprint", el("span", null, " (made and kept in this browser)")));
  if (t.results && t.resultsMode === "closed") items.push(el("button", { type: "button", id: "show-results", on: { click: ctl.showResults } }, "Results of hand " + t.results.hand_no));
  fill(box, ...items);
}

export function renderLog(t) {
  const ol = $("log");
  const last = t.log.slice(-60).reverse();
  fill(ol, ...last.map((x) => el("li", { class: x.kind }, ...partsNodes(x.parts))));
}

function renderEvidenceBox(t, ctl) {
  const box = $("evidence-box");
  const hand = t.hand;
  const handNo = hand ? hand.hand_no : t.results ? t.results.hand_no : null;
  if (handNo === null) {
    fill(box, el("h2", null, "Evidence"), el("p", { class: "small" }, "What the server signs for you, the header your page accepts and your own key are kept here for every hand you play."));
    return;
  }
  const items = ctl.evidenceOf(handNo);
  const n = items.length;
  const kinds = countByPurpose(items);
  const detail = Object.entries(kinds)
    .map(([k, c]) => c + " " + k)
    .join(", ");
  fill(
    box,
    el("h2", null, "Evidence"),
    el("p", { class: "small", id: "evidence-count", "data-count": n }, "Hand " + handNo + ": " + plural(n, "signed item") + " kept" + (detail ? " (" + detail + ")." : ".")),
    el("button", { type: "button", id: "download-evidence-side", disabled: !n, on: { click: () => ctl.downloadEvidence(handNo) } }, "Download evidence"),
  );
}

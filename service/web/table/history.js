/* "My hands": every hand the player took part in (GET /api/me/hands), each with its
   result, the tokens it won or cost, a link to verify it, its transcript, and the
   evidence this browser kept for it. */
import { api } from "./api.js";
import { $, el, fill, plural, signed } from "./dom.js";
import { S } from "./state.js";
import { verifyHref } from "./render-results.js";

function resultText(h) {
  if (h.status === "void") return "voided — nobody was charged";
  if (h.status !== "ended") return "being played";
  if (h.winner === h.seat) return "won";
  return h.points === null ? "lost" : "lost · " + plural(h.points, "point");
}

/** ctl: {evidenceOf(tableId, handNo), downloadEvidence(tableId, handNo), error(e, context)}. */
export async function loadHands(ctl) {
  try {
    const data = await api("GET", "/api/me/hands");
    S.hands = data.hands;
  } catch (e) {
    ctl.error(e, "Loading your hands failed");
  }
  renderHands(ctl);
}

export function renderHands(ctl) {
  const box = $("hands");
  const hands = S.hands;
  if (hands === null) {
    fill(box, el("p", { class: "muted" }, "Loading…"));
    return;
  }
  if (!hands.length) {
    fill(box, el("p", { class: "muted" }, "You have not played a hand yet."));
    return;
  }
  const rows = hands.map((h) => {
    const items = ctl.evidenceOf(h.table_id, h.hand_no);
    const when = h.ended_at ? new Date(h.ended_at).toLocaleString() : "";
    return el(
      "tr",
      { "data-hand": h.hand_id, class: h.winner === h.seat && h.status === "ended" ? "won" : "" },
      el("td", { class: "hand" }, el("b", null, "Hand " + h.hand_no), el("div", { class: "small" }, "table " + h.table_id + " · seat " + h.seat), when ? el("div", { class: "small" }, when) : null),
      el("td", { class: "result" }, resultText(h)),
      el("td", { class: "num tokens " + (h.delta > 0 ? "plus" : h.delta < 0 ? "minus" : ""), "data-delta": h.delta === null ? "" : h.delta }, h.delta === null ? "—" : signed(h.delta) + " HT"),
      el(
        "td",
        { class: "links" },
        h.transcript ? el("a", { class: "button", href: verifyHref(h.hand_id), target: "_blank", rel: "noopener", "data-verify": h.hand_id }, "Verify \u2197") : null,
        h.transcript ? el("a", { class: "button", href: h.transcript, download: "transcript-" + h.table_id + "-hand" + h.hand_no + ".json" }, "Transcript") : null,
        el("button", { type: "button", class: "evidence", disabled: !items.length, title: items.length ? "" : "this browser kept no evidence for this hand", on: { click: () => ctl.downloadEvidence(h.table_id, h.hand_no) } }, "Evidence (" + items.length + ")"),
      ),
    );
  });
  fill(
    box,
    el(
      "table",
      { class: "hands-table", id: "hands-table" },
      el("thead", null, el("tr", null, el("th", null, "Hand"), el("th", null, "Result"), el("th", { class: "num" }, "Tokens"), el("th", null, "Check it"))),
      el("tbody", null, rows),
    ),
  );
}

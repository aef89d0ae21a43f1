/* The player's evidence (docs/fairness.md §15): every signed object the server sends
   (acks, heads, receipts — kept whatever their purpose, without duplicates), the
   signed header the page accepted before it committed, and the page's own `player`
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

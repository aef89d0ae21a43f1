/* The player's Ed25519 key and the signatures of docs/fairness.md §9.  The key lives
   in IndexedDB as a CryptoKey whose private half cannot be exported, not even by
   this page; where IndexedDB is unavailable it is kept in localStorage as a JWK. */
import { store } from "./store.js";

const R = window.RummyPF;
const B = R.bytes;
export const PROTOCOL = "rummy-pf/v2";
const DB_NAME = "rummypf-table";

function idb() {
  return new Promise((resolve, reject) => {
    let req;
    try {
      req = window.indexedDB.open(DB_NAME, 1);
    } catch (e) {
      reject(e);
      return;
    }
    req.onupgradeneeded = () => req.result.createObjectStore("keys");
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function idbDo(mode, fn) {
  const db = await idb();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction("keys", mode);
      const req = fn(tx.objectStore("keys"));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

async function rawPublicHex(publicKey) {
  return B.bytesToHex(new Uint8Array(await crypto.subtle.exportKey("raw", publicKey)));
}

export async function fingerprintOf(pubHex) {
  return R.crypto.sha256Hex(B.hexToBytes(pubHex));
}

/** The player's signing key in this browser, made on first use: {privateKey, pub (hex), fingerprint, where}. */
export async function playerKey(playerId) {
  try {
    let rec = await idbDo("readonly", (s) => s.get(playerId));
    if (!rec) {
      const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
      rec = { privateKey: pair.privateKey, publicKey: pair.publicKey, pub: await rawPublicHex(pair.publicKey), created: Date.now() };
      await idbDo("readwrite", (s) => s.put(rec, playerId));
    }
    return { privateKey: rec.privateKey, pub: rec.pub, fingerprint: await fingerprintOf(rec.pub), where: "IndexedDB" };
  } catch (e) {
    return playerKeyJwk(playerId);
  }
}

async function playerKeyJwk(playerId) {
  const name = "key." + playerId;
  let saved = store.getJSON(name, null);
  if (!saved) {
    const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
    saved = { jwk: await crypto.subtle.exportKey("jwk", pair.privateKey), pub: await rawPublicHex(pair.publicKey) };
    store.setJSON(name, saved);
  }
  const privateKey = await crypto.subtle.importKey("jwk", saved.jwk, { name: "Ed25519" }, false, ["sign"]);
  return { privateKey, pub: saved.pub, fingerprint: await fingerprintOf(saved.pub), where: "localStorage" };
}

/** Ed25519 over LP("rummy-pf/v2/" + purpose) ‖ canonical(obj) (§9), as 128 hex digits. */
export async function sign(key, purpose, obj) {
  const msg = B.concat(B.LP(PROTOCOL + "/" + purpose), R.canonicalBytes(obj));
  return B.bytesToHex(new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key.privateKey, msg)));
}

/** The move body a player signs (§9). */
export function moveBody(tableId, handNo, prev, move) {
  return { table_id: tableId, hand_no: handNo, prev, move };
}

/** Is a receipt or head ({purpose, body, sig}) signed by the server key pubHex? */
export async function serverSigned(pubHex, item) {
  if (!item || !B.isHex(pubHex || "", 32) || !B.isHex(item.sig || "", 64)) return false;
  const msg = B.concat(B.LP(PROTOCOL + "/" + item.purpose), R.canonicalBytes(item.body));
  return R.crypto.ed25519Verify(B.hexToBytes(pubHex), B.hexToBytes(item.sig), msg);
}

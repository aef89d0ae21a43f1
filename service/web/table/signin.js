/* Signing in and out.  The token typed in is sent once (POST /api/session); the
   server answers with an HttpOnly session cookie that no script can read, and the
   page keeps no credential.  The page then makes (once) and registers the player's
   signing key, and pins the server's key. */
import { api, ServerError } from "./api.js";
import { $, el, fill, ht, nameEl } from "./dom.js";
import { fingerprintOf, playerKey } from "./keys.js";
import { S } from "./state.js";
import { store } from "./store.js";

/** Who the session cookie says the page is (null: nobody).  A token an older version
    of this page kept in localStorage is traded for a session once, and removed. */
export async function resume() {
  const s = await api("GET", "/api/session");
  if (s.player) {
    store.remove("token");
    return api("GET", "/api/me");
  }
  const old = store.get("token");
  if (!old) return null;
  store.remove("token");
  try {
    return await signIn(old);
  } catch (e) {
    return null;
  }
}

/** Sign in with a player token: the session cookie, then the player. */
export async function signIn(token) {
  await api("POST", "/api/session", { body: { token } });
  return api("GET", "/api/me");
}

export async function signOut() {
  try {
    await api("DELETE", "/api/session");
  } catch (e) {
    /* the cookie may already be gone */
  }
}

/** After sign-in: the player's key in this browser (registered when it is not the server's), and the pinned server key. */
export async function ready(me, ui) {
  S.me = me;
  S.names.set(me.id, me.name);
  try {
    S.key = await playerKey(me.id);
  } catch (e) {
    ui.error(e, "This browser cannot make an Ed25519 key (WebCrypto)");
    return false;
  }
  if (me.public_key !== S.key.pub) {
    try {
      await api("PUT", "/api/me/key", { body: { public_key: S.key.pub } });
      ui.notice(me.public_key ? "This browser's signing key is now the one registered for you (it replaces the key of another browser)." : "Your signing key was made in this browser and registered.");
      S.me.public_key = S.key.pub;
    } catch (e) {
      ui.error(e, "Registering your signing key failed");
    }
  }
  await loadServerKey();
  return true;
}

async function loadServerKey() {
  try {
    const k = await api("GET", "/api/fairness/key");
    S.servedKey = k.public_key_hex;
    const pinned = store.get("serverKey");
    if (!pinned) store.set("serverKey", k.public_key_hex);
    S.serverKey = pinned || k.public_key_hex;
  } catch (e) {
    S.serverKey = store.get("serverKey");
  }
  S.serverFingerprint = S.serverKey ? await fingerprintOf(S.serverKey) : null;
}

export async function refreshMe() {
  if (!S.me) return;
  try {
    S.me = Object.assign(S.me, await api("GET", "/api/me"));
    renderWho();
  } catch (e) {
    /* the balance shows the last known figures */
  }
}

export function renderWho() {
  const who = $("who");
  if (!S.me) {
    who.hidden = true;
    return;
  }
  who.hidden = false;
  fill($("me-name"), nameEl(S.me.name));
  fill($("me-balance"), el("span", { class: "label" }, "available "), el("b", { id: "me-available" }, ht(S.me.available)), S.me.held ? el("span", { class: "held" }, " · " + ht(S.me.held) + " held") : null);
}

/** The operator's form: a new player with a deposit; the page then signs in as them. */
export async function createPlayer(ui) {
  const op = $("op-token").value.trim();
  const name = $("new-name").value.trim();
  const deposit = Number($("new-deposit").value);
  if (!Number.isSafeInteger(deposit) || deposit < 1) {
    ui.error(new ServerError("bad_amount", "the deposit is a whole number of HT, at least 1"));
    return null;
  }
  try {
    const p = await api("POST", "/api/players", { token: op, body: { name, deposit } });
    const box = $("created");
    box.hidden = false;
    fill(box, el("p", null, "Player ", el("b", null, nameEl(p.name)), " created with ", ht(p.available), ". Their token is shown only this once — keep it:"), el("code", { id: "created-token", class: "token" }, p.token));
    $("op-token").value = "";
    return p.token;
  } catch (e) {
    ui.error(e, "Creating the player failed");
    return null;
  }
}

/* What the page says to the person outside the table's own areas: an error (plain
   words first, the server's code after), a short notice, and the banner that states
   the connection's situation for as long as it lasts. */
import { explain, ServerError } from "./api.js";
import { $, el, fill, plural } from "./dom.js";

let alertTimer = null;
export function showError(err, context) {
  if (err && !(err instanceof ServerError) && err.code && err.message !== undefined && !(err instanceof Error)) {
    err = new ServerError(err.code, err.message, err.rule); // an error frame's {code, message, rule}
  }
  const x = explain(err);
  $("alert-text").textContent = (context ? context + ": " : "") + x.text;
  $("alert-detail").textContent = x.detail;
  $("alert").hidden = false;
  $("alert").dataset.code = err && err.code ? err.code : "page";
  clearTimeout(alertTimer);
  alertTimer = setTimeout(hideError, 15000);
}

export function hideError() {
  $("alert").hidden = true;
}

let noticeTimer = null;
export function notice(text, ms) {
  const n = $("notice");
  n.textContent = text;
  n.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (n.hidden = true), ms || 8000);
}

/** The banner for the table shown: drawn from its state, so it says what holds now
    (the server going down, until the page is back; the connection lost; the table
    paused…) and goes when it no longer holds.  reconnect(): the "Reconnect now" button. */
export function renderBanner(t, reconnect) {
  const b = $("banner");
  const say = (kind, text, button) => {
    if (!b.hidden && b.dataset.kind === kind && b.firstChild && b.firstChild.textContent === text) return; // as it is
    b.className = "banner " + kind;
    b.dataset.kind = kind;
    fill(b, el("span", null, text), button || null);
    b.hidden = false;
  };
  if (!t) {
    b.hidden = true;
    fill(b);
    b.dataset.kind = "";
    return;
  }
  const retry = t.sock && t.sock.retryAt ? Math.max(1, Math.round((t.sock.retryAt - Date.now()) / 1000)) : null;
  const again = (label) => el("button", { type: "button", class: "ghost", id: "banner-reconnect", on: { click: reconnect } }, label);
  if (t.conn === "signed_out") {
    const signIn = el("button", { type: "button", class: "ghost", id: "banner-sign-in", on: { click: () => $("sign-out").click() } }, "Sign in again");
    say("bad", "Your session has ended (you signed out in another window, or it expired), so this page cannot reach the table. Sign in again to return to your seat; until then the clock plays for you (rule D16).", signIn);
  } else if (t.conn === "replaced") {
    say("bad", "This table was opened in another window or tab; this one has stopped.", again("Use it here"));
  } else if (t.goingDown) {
    const when = t.conn === "open" ? "" : retry ? " Next try in " + plural(retry, "second") + "." : " Reconnecting…";
    say("warn", "The server is going down for a moment (" + t.goingDown + "). The page reconnects by itself; your seat waits, and a hand resumes where it was with time to move (rule D32)." + when, t.conn === "lost" ? again("Reconnect now") : null);
  } else if (t.moving && t.conn !== "open") {
    say("info", "The table moved to another server of the card room; the page follows it…");
  } else if (t.conn === "lost") {
    say("bad", "Connection lost — reconnecting in " + plural(retry || 1, "second") + "… Your seat and your clock stay at the table.", again("Reconnect now"));
  } else if (t.paused) {
    say("warn", "The table is paused: " + (t.pausedMessage || "it cannot reach its database") + ". No clock runs; it resumes by itself.");
  } else if (t.conn === "connecting" && !t.everConnected) {
    say("info", "Connecting to the table…");
  } else {
    b.hidden = true;
    fill(b);
    b.dataset.kind = "";
  }
}

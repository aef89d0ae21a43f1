/* The REST calls (the session cookie goes with them: same origin) and the server's
   typed errors in words a person can act on. */

export class ServerError extends Error {
  constructor(code, message, rule, status) {
    super(message || code);
    this.code = code;
    this.serverMessage = message || "";
    this.rule = rule || null;
    this.status = status || null;
  }
}

/* What a person can act on.  The server's own message follows in small print. */
const PLAIN = {
  not_your_turn: "It is not your turn.",
  must_draw_first: "Draw a card first: take the closed pile or the open card, then discard or declare.",
  already_drawn: "You have already drawn this turn: now discard a card (or declare).",
  cannot_drop_after_draw: "You can only drop at the start of your turn, before you draw.",
  open_pile_empty: "The open pile is empty: draw from the closed pile.",
  card_not_in_hand: "That card is not in your hand.",
  bad_hint: "Your groups must hold exactly the 13 cards you keep.",
  bad_action: "The server did not understand that move.",
  not_in_hand: "You are out of this hand.",
  hand_over: "The hand has already ended.",
  wrong_hand: "That hand is over; the table has moved on.",
  wrong_phase: "That does not fit the hand's current phase.",
  no_hand: "No hand is being played at this table right now.",
  stale_head: "The table moved on before your move arrived.",
  unknown_head: "Your move was signed over a record this hand does not have: it was not judged. Reload the table.",
  bad_signature: "The server did not accept your signature: this browser's key is not the one registered for you. Sign out and in again to register it.",
  signature_required: "You are in a hand: leaving must be signed. Try again.",
  no_player_key: "Your signing key is not registered yet. Sign out and in again.",
  key_in_use: "This browser's signing key is registered to another player: sign in as that player here, or use another browser.",
  bad_key: "The server refused this browser's signing key.",
  already_committed: "Your seed commitment for this hand is already in.",
  already_revealed: "Your seed for this hand is already revealed.",
  not_committed: "You committed no seed in time, so there is nothing to reveal.",
  seed_mismatch: "The seed does not match your commitment.",
  insufficient_balance: "You do not have enough available to sit here.",
  seat_taken: "That seat was just taken: pick another one.",
  already_seated: "You already sit at this table.",
  table_full: "Every seat at this table is taken.",
  not_seated: "You have no seat at this table.",
  no_such_seat: "This table has no such seat: pick one of its seats.",
  table_closed: "This table is closed: no new hands are dealt here.",
  wrong_node: "This table is served by another server of the card room; the page connects there.",
  moved: "The table moved to another server of the card room; the page follows it.",
  token_rotated: "This token was replaced by a newer one. Use the new token.",
  no_such_table: "That table does not exist (any more).",
  not_joined: "The page lost its place at the table; reconnecting.",
  unavailable: "The table cannot reach its database right now. Nothing was changed: try again in a moment.",
  busy: "The table is slow to answer. Check the table before you try again.",
  outcome_unknown: "The server lost its answer while storing this: it may or may not have been done. Check before you try again.",
  shutting_down: "The server is restarting. Try again in a moment.",
  server_error: "The server failed. Nothing was applied unless the table shows it.",
  unauthorized: "This token was not accepted. Check it and sign in again.",
  bad_origin: "The server refused a request that did not come from its own pages.",
  bad_name: "That name cannot be used: names are visible text, without control or direction characters.",
  bad_request: "The server refused the request.",
  bad_amount: "That amount is not allowed.",
  message_too_large: "The message was too large.",
  bad_message: "The server could not read the page's message.",
  no_such_hand: "There is no such hand.",
  hand_in_progress: "The hand is still being played: its transcript is published when it ends.",
  void_without_transcript: "The hand was voided before it had a readable header: there is no transcript.",
  disconnected: "The connection to the table was lost before the answer came. The page reconnects by itself; check the table before you try again.",
  network: "Could not reach the server. Check your connection.",
};

/** {text, detail} for an error: plain words first, the server's message and rule after. */
export function explain(err) {
  if (!(err instanceof ServerError)) return { text: "Something went wrong in the page: " + (err && err.message ? err.message : String(err)), detail: "" };
  const text = PLAIN[err.code] || err.serverMessage || "The server refused: " + err.code;
  const bits = [];
  if (err.serverMessage && err.serverMessage !== text) bits.push(err.serverMessage);
  if (err.rule) bits.push("rule " + err.rule);
  bits.push(err.code);
  return { text, detail: bits.join(" · ") };
}

/** A REST call: opts.token (Bearer, for the operator's token), opts.body (JSON), opts.raw (the text). */
export async function api(method, path, opts) {
  opts = opts || {};
  const headers = { Accept: "application/json" };
  if (opts.token) headers.Authorization = "Bearer " + opts.token;
  let body;
  if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let resp;
  try {
    resp = await fetch(path, { method, headers, body, cache: "no-store", credentials: "same-origin" });
  } catch (e) {
    throw new ServerError("network", "could not reach the server (" + e.message + ")", null, 0);
  }
  const text = await resp.text();
  let data = null;
  if (!opts.raw || !resp.ok) {
    try {
      data = JSON.parse(text);
    } catch (e) {
      data = null;
    }
  }
  if (!resp.ok) {
    const err = data && data.error ? data.error : { code: "http_" + resp.status, message: text.slice(0, 200) };
    throw new ServerError(err.code, err.message, err.rule, resp.status);
  }
  return opts.raw ? text : data;
}

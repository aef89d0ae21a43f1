/* One table's WebSocket, which reconnects by itself.  The session cookie goes with
   the upgrade (the server checks the page's Origin); no token is sent by the page. */
import { ServerError } from "./api.js";

const BACKOFF_FIRST = 500;
const BACKOFF_MAX = 8000;
const SUBPROTOCOL = "rummy.v2";
/* A node that stands still (frozen, its host hung, the path to it cut without a reset)
   keeps the socket open and says nothing: the browser would wait on it for ever while
   the table's new owner runs the clock.  So a socket that has heard nothing for QUIET_MS
   asks (a `ping`); one that then hears nothing for ANSWER_MS more, or a handshake not
   done in CONNECT_MS, is given up and the table asked for elsewhere: within 10 s, inside
   the reach the new owner gives a player the house kept away (D37, docs/api.md). */
export const QUIET_MS = 5000;
export const ANSWER_MS = 4000;
export const CONNECT_MS = 8000;
/* A live server says `waiting` every 2 s while a message's table is slow, and answers
   `busy` by 30 s (docs/api.md, "Silence"): a message still `waiting` after WAITING_MS is
   one this server will not answer (a stuck table, or a server that keeps the player
   waiting while another node runs its clock), and the socket is given up like a silent one. */
export const WAITING_MS = 40000;
const WATCH_MS = 500;
/* A node on another host name takes a ticket from this page's own server (the cookie
   does not go there), and a server that stands still gives none: while the card room
   has such nodes, the page keeps SPARES spare tickets (each opens one socket within
   the server's minute), fetched again after SPARE_MS while its own server answers. */
const SPARE_MS = 40000;
const SPARES = 2;
/* Until the join is answered, table pushes are older than the snapshot that answers
   it (the table answers in order), which already holds their effect. */
const GATED = new Set(["table", "hand", "update", "result", "paused", "resumed"]);

/** The host (name:port) of a URL, or null. */
function hostOf(u) {
  try {
    return new URL(u).host;
  } catch (e) {
    return null;
  }
}

/** The node URLs a frame named (strings only). */
function urls(list) {
  return Array.isArray(list) ? list.filter((u) => typeof u === "string") : [];
}

/* It joins on every (re)connect (with joinArgs(), e.g. the newest record seen, so
   that the snapshot holds the events missed) and hands the snapshot to
   onSnapshot(snapshot, {reconnected}); pushes go to onPush(message); replies settle
   the promise send() returned.  After a close it reconnects with backoff (at once
   when the browser says it is back online, or when the table moved), unless stop()
   was called or another window took the seat over ("replaced").  A handshake the
   server refused looks to a page like any failed connection (a browser shows no
   status), so after one it asks opts.signedOut() (the REST session): a session that
   ended (signed out in another window, expired) is told as "signed_out" and the
   socket stops trying, instead of "reconnecting" for ever while the clock plays for
   the seat.  The session cookie goes only to the host that set it: a socket to a node
   of the card room on another host name carries a one-time ticket from the page's own
   server instead (opts.ticket(), offered as the subprotocol "ticket.<ticket>"). */
/** The signed items ({purpose, body, sig}) among an object's fields. */
export function signedItems(obj) {
  if (!obj || typeof obj !== "object") return [];
  return Object.values(obj).filter((v) => v && typeof v === "object" && typeof v.purpose === "string" && v.body && typeof v.sig === "string");
}

export class TableSocket {
  constructor(opts) {
    this.tableId = opts.tableId;
    this.onSnapshot = opts.onSnapshot;
    this.onPush = opts.onPush;
    this.onState = opts.onState || (() => {});
    this.joinArgs = opts.joinArgs || (() => ({}));
    this.signedOut = opts.signedOut || (async () => false);
    this.ticket = opts.ticket || (async () => null);
    this.ws = null;
    this.node = null; // the node that serves the table, when not this page's own server
    this.moving = false;
    this.n = 0;
    this.pending = new Map();
    this.stopped = false;
    this.replaced = false;
    this.connections = 0;
    this.backoff = BACKOFF_FIRST;
    this.timer = null;
    this.retryAt = null;
    this.servers = []; // the card room's other nodes, as the last one heard named them
    this.heard = 0; // when the socket last brought anything (Date.now())
    this.opening = 0; // when its handshake began
    this.pinged = null; // when it was last asked, still unanswered
    this.waited = new Map(); // message id -> when it was first told `waiting` (Date.now())
    this.pings = 0; // pings sent, and sockets given up for silence (tests read them)
    this.gaveUp = 0;
    this.spare = []; // [{ticket, at}]: for nodes on another host name
    this.stay = false; // the join was refused here: ask this node again, not the page's own
    this.sparing = false;
    this.watch = setInterval(() => this._watch(), WATCH_MS);
    this._online = () => {
      if (!this.stopped && !this.replaced && (!this.ws || this.ws.readyState !== WebSocket.OPEN)) {
        if (this.ws && this.ws.readyState === WebSocket.CONNECTING) return;
        this.ws = null;
        this.reconnectNow();
      }
    };
    window.addEventListener("online", this._online);
  }

  url() {
    let base = window.location.origin;
    if (this.node) {
      try {
        base = new URL(this.node).origin;
      } catch (e) {
        this.node = null;
      }
    }
    // the table in the URL: on a server of several workers, the socket is handed to
    // the one that serves it before the first frame (docs/deploy.md)
    return base.replace(/^http/, "ws") + "/ws?table=" + encodeURIComponent(this.tableId);
  }

  connect() {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.retryAt = null;
    this.onState("connecting");
    const url = this.url();
    let host = null;
    try {
      host = new URL(url).host;
    } catch (e) {
      host = null;
    }
    if (host === null || host === window.location.host) {
      this._open(url, null);
      return;
    }
    // another host name: its handshake needs a ticket (the cookie does not go there);
    // the spare one first: this page's own server may be the node that stands still
    const spare = this._takeSpare();
    if (spare !== null) {
      this._open(url, spare);
      return;
    }
    this._ticketWithin()
      .catch(() => null) // the page's own server is away (or silent): try without (refused, then again)
      .then((ticket) => {
        if (!this.stopped && !this.ws) this._open(url, ticket);
      });
  }

  _open(url, ticket) {
    let ws;
    try {
      ws = new WebSocket(url, ticket ? [SUBPROTOCOL, "ticket." + ticket] : [SUBPROTOCOL]);
    } catch (e) {
      this._closed(null);
      return;
    }
    this.ws = ws;
    this.joined = false;
    this.opening = this.heard = Date.now();
    this.pinged = null;
    this.waited.clear();
    let opened = false;
    ws.onopen = async () => {
      if (this.ws !== ws) return;
      opened = true;
      this.connections += 1;
      const reconnected = this.connections > 1;
      try {
        const snap = await this.send("join", this.joinArgs());
        this.joined = true;
        this.backoff = BACKOFF_FIRST;
        this.onState("open");
        this.onSnapshot(snap, { reconnected });
      } catch (e) {
        if (this.ws !== ws) return;
        if (e instanceof ServerError && (e.code === "no_such_table" || e.code === "table_closed")) {
          // gone for good: a closed table is never served again (trying again would loop)
          this.stop();
          this.onState("gone", e);
        } else if (e instanceof ServerError && e.code === "wrong_node" && e.redirect) {
          // a cluster: another node serves this table; connect there at once
          this.node = e.redirect;
          this.moving = true;
          ws.close(1000, "served elsewhere");
        } else {
          // between nodes, unavailable, busy…: try again after a pause, here (it
          // answers: it sends the page on when the table is served elsewhere)
          this.onState("refused", e);
          this.stay = true;
          ws.close(1000, "join refused");
        }
      }
    };
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      this.heard = Date.now();
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch (e) {
        return;
      }
      if (m.type === "waiting") {
        // its table has not answered yet: this server lives (docs/api.md) — but not for ever
        if (!this.pending.has(m.id)) return;
        const first = this.waited.get(m.id);
        if (first === undefined) this.waited.set(m.id, this.heard);
        else if (this.heard - first >= WAITING_MS) this._giveUp(ws);
        return;
      }
      if ((m.type === "reply" || m.type === "error") && m.id !== null) this.waited.delete(m.id);
      if (m.type === "reply" && m.update && typeof m.update === "object" && this.joined) {
        this.onPush(m.update); // a move's update comes with its reply, in order (docs/api.md)
      }
      if ((m.type === "reply" || m.type === "error") && m.id !== null && this.pending.has(m.id)) {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        if (m.type === "reply") p.resolve(m.result);
        else {
          const err = new ServerError(m.error.code, m.error.message, m.error.rule);
          if (m.error.redirect) err.redirect = m.error.redirect;
          err.signed = signedItems(m).concat(signedItems(m.error)); // a refusal's ack (§15)
          p.reject(err);
        }
        return;
      }
      if (m.type === "hello") this.servers = urls(m.servers);
      if (m.type === "replaced") this.replaced = true;
      const named = m.type === "shutdown" || m.type === "moved" ? urls(m.servers) : [];
      if (m.type === "shutdown" && named.length > 0) {
        // this node is going down and has handed its tables over: when it closes the
        // socket, ask another node of the card room at once
        this.node = named[0];
        this.servers = named;
        this.moving = true;
      }
      if (m.type === "moved") {
        // the table went to another node: ask another node of the card room when this
        // one names any (it may have lost its database, and cannot tell where), else
        // this page's own server, at once
        this.node = named.length > 0 ? named[0] : null;
        if (named.length > 0) this.servers = named;
        this.moving = true;
      }
      if (!this.joined && GATED.has(m.type)) return;
      this.onPush(m);
    };
    ws.onclose = () => {
      if (this.ws === ws && !opened) this._refusedOrUnreachable();
      this._closed(ws);
    };
    ws.onerror = () => {
      /* onclose follows */
    };
  }

  /** Every WATCH_MS: a handshake too long, or a socket silent though asked, is given up. */
  _watch() {
    const ws = this.ws;
    if (!ws || this.stopped) return;
    const now = Date.now();
    if (ws.readyState === WebSocket.CONNECTING) {
      if (now - this.opening >= CONNECT_MS) this._giveUp(ws);
      return;
    }
    if (ws.readyState !== WebSocket.OPEN) return;
    if (this.joined) this._keepSpare(now);
    if (this.pinged !== null && this.heard < this.pinged) {
      // asked and nothing since (a late timer cannot make a live socket look dead:
      // anything heard after the ping clears it)
      if (now - this.pinged >= ANSWER_MS) this._giveUp(ws);
      return;
    }
    if (now - this.heard >= QUIET_MS) {
      this.n += 1;
      const id = "w" + this.n;
      this.pending.set(id, { resolve: () => {}, reject: () => {} }); // its answer is only a sign of life
      this.pinged = now;
      this.pings += 1;
      ws.send(JSON.stringify({ id, type: "ping" }));
    }
  }

  /** A ticket from this page's own server, or null when it has not answered in ANSWER_MS
      (it may be the node that stands still). */
  _ticketWithin() {
    return Promise.race([this.ticket(), new Promise((resolve) => setTimeout(() => resolve(null), ANSWER_MS))]);
  }

  /** A fresh spare ticket, used up (null: none). */
  _takeSpare() {
    const now = Date.now();
    this.spare = this.spare.filter((s) => now - s.at < SPARE_MS + 10000);
    const spare = this.spare.shift();
    return spare ? spare.ticket : null;
  }

  /** Fetch a spare ticket when a known node is on another host name and fewer than
      SPARES fresh ones are held (an old one is let go). */
  _keepSpare(now) {
    if (this.sparing) return;
    this.spare = this.spare.filter((s) => now - s.at < SPARE_MS);
    if (this.spare.length >= SPARES) return;
    if (!this.servers.some((u) => hostOf(u) !== null && hostOf(u) !== window.location.host)) return;
    this.sparing = true;
    this._ticketWithin()
      .then((ticket) => {
        if (typeof ticket === "string" && ticket) this.spare.push({ ticket, at: Date.now() });
      })
      .catch(() => {})
      .finally(() => {
        this.sparing = false;
      });
  }

  /** The node stands still: leave the socket and ask the next node of the ring (this
      page's own server, then each node named): at once after a socket that had been
      answering, after the backoff after a handshake. */
  _giveUp(ws) {
    if (this.ws !== ws) return;
    const handshake = ws.readyState === WebSocket.CONNECTING;
    this.gaveUp += 1;
    const ring = [null].concat(this.servers);
    const at = ring.indexOf(this.node);
    const next = ring.length > 1 ? ring[(at + 1) % ring.length] : null;
    this.ws = null; // its close, whenever it comes, is no longer this socket's
    try {
      ws.close(4001, "the server did not answer");
    } catch (e) {
      /* closing a socket that never opened */
    }
    this.node = next;
    if (handshake) {
      // not answered: a server holding handshakes while its database is slow, or one
      // that stands still; the next node after the usual backoff (an abandoned
      // handshake may still take a slot there for a while)
      this._closed(null, true);
      return;
    }
    this.moving = true; // it had been answering: ask the next node at once
    this.onState("lost", 0);
    this._closed(null);
  }

  _closed(ws, keepNode = false) {
    if (ws !== null && this.ws !== ws) return;
    this.ws = null;
    for (const p of this.pending.values()) p.reject(new ServerError("disconnected", "the connection closed before the answer came"));
    this.pending.clear();
    if (this.stopped) return;
    if (this.moving) {
      this.moving = false;
      this.connect();
      return;
    }
    // any other close: ask this page's own server again where the table is served
    if (!keepNode && !this.stay) this.node = null;
    this.stay = false;
    if (this.replaced) {
      this.onState("replaced");
      return;
    }
    const wait = Math.round(this.backoff * (0.8 + Math.random() * 0.4));
    this.backoff = Math.min(BACKOFF_MAX, this.backoff * 2);
    this.retryAt = Date.now() + wait;
    this.onState("lost", wait);
    this.timer = setTimeout(() => this.connect(), wait);
  }

  /** The handshake failed: ask whether the session still holds (the retry goes on meanwhile). */
  async _refusedOrUnreachable() {
    let gone = false;
    try {
      gone = await this.signedOut();
    } catch (e) {
      gone = false; // unreachable: keep trying
    }
    if (gone && !this.stopped) {
      this.stop();
      this.onState("signed_out");
    }
  }

  reconnectNow() {
    this.replaced = false;
    this.backoff = BACKOFF_FIRST;
    if (this.ws) return;
    this.connect();
  }

  /** Send {type, table_id, ...fields} with a fresh id; resolves with the reply's result, rejects with a ServerError.
      A move's card ids go three characters wide (toServer). */
  send(type, fields) {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new ServerError("disconnected", "not connected to the table"));
    this.n += 1;
    const id = "w" + this.n;
    const msg = Object.assign({ id, type, table_id: this.tableId }, fields || {});
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      ws.send(toServer(msg));
    });
  }

  /** Close as if the network had dropped (tests and the "reconnect" button use it). */
  drop() {
    if (this.ws) this.ws.close(4000, "dropped by the page");
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.watch);
    window.removeEventListener("online", this._online);
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close(1000, "left the table page");
    }
    for (const p of this.pending.values()) p.reject(new ServerError("disconnected", "the page left the table"));
    this.pending.clear();
  }
}

const CARD = "\u0001card";
const MARKED = /\{"\\u0001card":(\d+)\}/g;

function mark(c) {
  return Number.isInteger(c) ? { [CARD]: c } : c;
}

/** A message's JSON text with each card id of its move (``card``, the ``hint``'s groups)
    padded with blanks to three characters, as the server pads its own
    (service/fastjson.py to_client): the traffic is encrypted but its lengths are not,
    and a declare's finish card and kept cards stay hidden until the hand ends (the
    audit h87).  JSON allows blanks before a value; the move's signature is over its
    canonical form, which has none. */
export function toServer(msg) {
  const a = msg.action;
  if (!a || typeof a !== "object") return JSON.stringify(msg);
  const m = Object.assign({}, a, { card: mark(a.card) });
  if (!("card" in a)) delete m.card;
  if (Array.isArray(a.hint)) m.hint = a.hint.map((g) => (Array.isArray(g) ? g.map(mark) : g));
  return JSON.stringify(Object.assign({}, msg, { action: m })).replace(MARKED, (_, d) => d.padStart(3, " "));
}

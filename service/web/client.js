/* The table client's plumbing: what the page keeps (token, signing key, seeds,
   evidence), the REST calls, the player's signatures, plain words for the server's
   typed errors, and a WebSocket that reconnects by itself.  Classic script: attaches
   to window.RummyClient.  Uses window.RummyPF (canonical JSON, LP, hex, SHA-256,
   Ed25519 verification, the commitment of docs/fairness.md §5). */
(function (root) {
  "use strict";
  const R = root.RummyPF;
  const B = R.bytes;
  const PROTOCOL = "rummy-pf/v2";
  const LS = "rummypf.";

  // ------------------------------------------------------------------ local storage

  const store = {
    get(name) {
      try {
        return root.localStorage.getItem(LS + name);
      } catch (e) {
        return null;
      }
    },
    set(name, value) {
      try {
        root.localStorage.setItem(LS + name, value);
      } catch (e) {
        /* storage full or disabled: the page still works for this visit */
      }
    },
    remove(name) {
      try {
        root.localStorage.removeItem(LS + name);
      } catch (e) {
        /* nothing to do */
      }
    },
    getJSON(name, fallback) {
      const text = store.get(name);
      if (text === null) return fallback;
      try {
        return JSON.parse(text);
      } catch (e) {
        return fallback;
      }
    },
    setJSON(name, value) {
      store.set(name, JSON.stringify(value));
    },
  };

  // ------------------------------------------------------------------ the player's key

  /* The Ed25519 key lives in IndexedDB as a CryptoKey whose private half cannot be
     exported (not even by this page).  Where IndexedDB is unavailable, the key is
     kept in localStorage as a JWK instead. */
  const DB_NAME = "rummypf-table";

  function idb() {
    return new Promise((resolve, reject) => {
      let req;
      try {
        req = root.indexedDB.open(DB_NAME, 1);
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

  async function fingerprintOf(pubHex) {
    return R.crypto.sha256Hex(B.hexToBytes(pubHex));
  }

  /** The player's signing key in this browser, made on first use: {privateKey, pub (hex), fingerprint, where}. */
  async function playerKey(playerId) {
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

  /** Ed25519 over LP("rummy-pf/v2/" + purpose) ‖ canonical(obj) (docs/fairness.md §9), as 128 hex digits. */
  async function sign(key, purpose, obj) {
    const msg = B.concat(B.LP(PROTOCOL + "/" + purpose), R.canonicalBytes(obj));
    return B.bytesToHex(new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key.privateKey, msg)));
  }

  /** The move body a player signs (§9). */
  function moveBody(tableId, handNo, prev, move) {
    return { table_id: tableId, hand_no: handNo, prev, move };
  }

  /** Is a receipt or head ({purpose, body, sig}) signed by the server key pubHex? */
  async function serverSigned(pubHex, item) {
    if (!item || !B.isHex(pubHex || "", 32) || !B.isHex(item.sig || "", 64)) return false;
    const msg = B.concat(B.LP(PROTOCOL + "/" + item.purpose), R.canonicalBytes(item.body));
    return R.crypto.ed25519Verify(B.hexToBytes(pubHex), B.hexToBytes(item.sig), msg);
  }

  // ------------------------------------------------------------------ seeds (§5)

  function seedName(playerId, tableId, handNo) {
    return "seed." + playerId + "." + tableId + "." + handNo;
  }

  /** This hand's 32-byte seed (hex), drawn once and kept until the hand ends, so that a reload can still reveal it. */
  function seedFor(playerId, tableId, handNo) {
    const name = seedName(playerId, tableId, handNo);
    let seed = store.get(name);
    if (!seed || !B.isHex(seed, 32)) {
      seed = B.bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
      store.set(name, seed);
    }
    return seed;
  }

  function knownSeed(playerId, tableId, handNo) {
    const seed = store.get(seedName(playerId, tableId, handNo));
    return seed && B.isHex(seed, 32) ? seed : null;
  }

  function forgetSeed(playerId, tableId, handNo) {
    store.remove(seedName(playerId, tableId, handNo));
  }

  // ------------------------------------------------------------------ evidence (§15)

  /* Every receipt and signed head, per hand, in localStorage (so that a reload keeps
     it), without duplicates.  The download is exactly an evidence file: a JSON array
     of {purpose, body, sig}. */
  function evidenceName(playerId, tableId, handNo) {
    return "evidence." + playerId + "." + tableId + "." + handNo;
  }

  function evidenceOf(playerId, tableId, handNo) {
    return store.getJSON(evidenceName(playerId, tableId, handNo), []);
  }

  function keepEvidence(playerId, item) {
    if (!item || (item.purpose !== "receipt" && item.purpose !== "head") || !item.body) return false;
    const name = evidenceName(playerId, item.body.table_id, item.body.hand_no);
    const list = store.getJSON(name, []);
    const text = R.canonical(item);
    if (list.some((x) => R.canonical(x) === text)) return false;
    list.push({ purpose: item.purpose, body: item.body, sig: item.sig });
    store.setJSON(name, list);
    const index = store.getJSON("evidence-index." + playerId, []);
    if (!index.includes(name)) {
      index.push(name);
      // keep the evidence of the last 200 hands
      while (index.length > 200) store.remove(index.shift());
      store.setJSON("evidence-index." + playerId, index);
    }
    return true;
  }

  function download(filename, text, type) {
    const blob = new Blob([text], { type: type || "application/json" });
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = filename;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  // ------------------------------------------------------------------ errors in plain words

  class ServerError extends Error {
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
    bad_signature: "The server did not accept your signature: this browser's key is not the one registered for you. Sign out and in again to register it.",
    signature_required: "You are in a hand: leaving must be signed. Try again.",
    no_player_key: "Your signing key is not registered yet. Sign out and in again.",
    already_committed: "Your seed commitment for this hand is already in.",
    already_revealed: "Your seed for this hand is already revealed.",
    not_committed: "You committed no seed in time, so there is nothing to reveal.",
    seed_mismatch: "The seed does not match your commitment.",
    insufficient_balance: "You do not have enough available to sit here.",
    seat_taken: "That seat was just taken: pick another one.",
    already_seated: "You already sit at this table.",
    table_full: "Every seat at this table is taken.",
    not_seated: "You have no seat at this table.",
    table_closed: "This table is closed: no new hands are dealt here.",
    wrong_node: "This table is served by another server of the card room; the page connects there.",
    token_rotated: "This token was replaced by a newer one. Use the new token.",
    no_such_table: "That table does not exist (any more).",
    not_joined: "The page lost its place at the table; reconnecting.",
    unavailable: "The table cannot reach its database right now. Nothing was changed: try again in a moment.",
    busy: "The table is slow to answer. Check the table before you try again.",
    shutting_down: "The server is restarting. Try again in a moment.",
    server_error: "The server failed. Nothing was applied unless the table shows it.",
    unauthorized: "This token was not accepted. Check it and sign in again.",
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
  function explain(err) {
    if (!(err instanceof ServerError)) return { text: "Something went wrong in the page: " + (err && err.message ? err.message : String(err)), detail: "" };
    const text = PLAIN[err.code] || err.serverMessage || "The server refused: " + err.code;
    const bits = [];
    if (err.serverMessage && err.serverMessage !== text) bits.push(err.serverMessage);
    if (err.rule) bits.push("rule " + err.rule);
    bits.push(err.code);
    return { text, detail: bits.join(" · ") };
  }

  // ------------------------------------------------------------------ REST

  async function api(method, path, opts) {
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
      resp = await fetch(path, { method, headers, body, cache: "no-store" });
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

  // ------------------------------------------------------------------ the WebSocket

  const BACKOFF_FIRST = 500;
  const BACKOFF_MAX = 8000;
  const GATED = new Set(["table", "hand", "update", "result", "paused", "resumed"]);

  /* One table's socket.  It joins on every (re)connect (with joinArgs(), e.g. the
     newest record seen, so that the snapshot holds the events missed) and hands the snapshot to
     onSnapshot(snapshot, {reconnected}); pushes go to onPush(message); replies settle
     the promise send() returned.  After a close it reconnects with backoff (at once
     when the browser says it is back online), unless stop() was called or another
     window took the seat over ("replaced"). */
  class TableSocket {
    constructor(opts) {
      this.token = opts.token;
      this.tableId = opts.tableId;
      this.onSnapshot = opts.onSnapshot;
      this.onPush = opts.onPush;
      this.onState = opts.onState || (() => {});
      // what the join asks for beyond the table: {since: {hand_no, i}}, the newest record seen
      this.joinArgs = opts.joinArgs || (() => ({}));
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
      this._online = () => {
        // back online: try at once rather than at the end of the backoff
        if (!this.stopped && !this.replaced && (!this.ws || this.ws.readyState !== WebSocket.OPEN)) {
          if (this.ws && this.ws.readyState === WebSocket.CONNECTING) return;
          this.ws = null;
          this.reconnectNow();
        }
      };
      root.addEventListener("online", this._online);
    }

    url() {
      let base = root.location.origin;
      if (this.node) {
        try {
          base = new URL(this.node).origin;
        } catch (e) {
          this.node = null;
        }
      }
      return base.replace(/^http/, "ws") + "/ws";
    }

    connect() {
      if (this.stopped) return;
      clearTimeout(this.timer);
      this.timer = null;
      this.retryAt = null;
      this.onState("connecting");
      let ws;
      try {
        // a page cannot set an Authorization header on a WebSocket, and a token in the
        // URL would land in proxies' logs: it goes as a second subprotocol (docs/api.md)
        ws = new WebSocket(this.url(), ["rummy.v2", "bearer." + this.token]);
      } catch (e) {
        this._closed(null);
        return;
      }
      this.ws = ws;
      this.joined = false;
      ws.onopen = async () => {
        if (this.ws !== ws) return;
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
          if (e instanceof ServerError && e.code === "no_such_table") {
            this.stop();
            this.onState("gone", e);
          } else if (e instanceof ServerError && e.code === "wrong_node" && e.redirect) {
            // a cluster: another node serves this table; connect there at once
            this.node = e.redirect;
            this.moving = true;
            ws.close(1000, "served elsewhere");
          } else {
            // between nodes, unavailable, busy…: try again after a pause
            this.onState("refused", e);
            ws.close(1000, "join refused");
          }
        }
      };
      ws.onmessage = (ev) => {
        if (this.ws !== ws) return;
        let m;
        try {
          m = JSON.parse(ev.data);
        } catch (e) {
          return;
        }
        if ((m.type === "reply" || m.type === "error") && m.id !== null && this.pending.has(m.id)) {
          const p = this.pending.get(m.id);
          this.pending.delete(m.id);
          if (m.type === "reply") p.resolve(m.result);
          else {
            const err = new ServerError(m.error.code, m.error.message, m.error.rule);
            if (m.error.redirect) err.redirect = m.error.redirect;
            p.reject(err);
          }
          return;
        }
        if (m.type === "replaced") this.replaced = true;
        if (m.type === "shutdown" && Array.isArray(m.servers) && m.servers.length > 0 && typeof m.servers[0] === "string") {
          // this node is going down and has handed its tables over: when it closes the
          // socket, ask another node of the card room at once (it sends us on to the
          // table's new owner); this page's own server may stay down a while
          this.node = m.servers[0];
          this.moving = true;
        }
        // Until the join is answered, table pushes are older than the snapshot that
        // answers it (the table answers in order), which already holds their effect.
        if (!this.joined && GATED.has(m.type)) return;
        this.onPush(m);
      };
      ws.onclose = () => this._closed(ws);
      ws.onerror = () => {
        /* onclose follows */
      };
    }

    _closed(ws) {
      if (ws !== null && this.ws !== ws) return;
      this.ws = null;
      for (const p of this.pending.values()) p.reject(new ServerError("disconnected", "the connection closed before the answer came"));
      this.pending.clear();
      if (this.stopped) return;
      if (this.moving) {
        // sent on to the node that serves the table: go there now
        this.moving = false;
        this.connect();
        return;
      }
      // any other close: ask this page's own server again where the table is served
      this.node = null;
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

    reconnectNow() {
      this.replaced = false;
      this.backoff = BACKOFF_FIRST;
      if (this.ws) return;
      this.connect();
    }

    /** Send {type, table_id, ...fields} with a fresh id; resolves with the reply's result, rejects with a ServerError. */
    send(type, fields) {
      const ws = this.ws;
      if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new ServerError("disconnected", "not connected to the table"));
      this.n += 1;
      const id = "w" + this.n;
      const msg = Object.assign({ id, type, table_id: this.tableId }, fields || {});
      return new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        ws.send(JSON.stringify(msg));
      });
    }

    /** Close as if the network had dropped (tests and the "reconnect" button use it). */
    drop() {
      if (this.ws) this.ws.close(4000, "dropped by the page");
    }

    stop() {
      this.stopped = true;
      clearTimeout(this.timer);
      root.removeEventListener("online", this._online);
      if (this.ws) {
        const ws = this.ws;
        this.ws = null;
        ws.close(1000, "left the table page");
      }
      for (const p of this.pending.values()) p.reject(new ServerError("disconnected", "the page left the table"));
      this.pending.clear();
    }
  }

  root.RummyClient = {
    PROTOCOL,
    store,
    playerKey,
    fingerprintOf,
    sign,
    moveBody,
    serverSigned,
    seedFor,
    knownSeed,
    forgetSeed,
    evidenceOf,
    keepEvidence,
    download,
    ServerError,
    explain,
    api,
    TableSocket,
  };
})(window);

/* rummy-pf browser verifier: bytes, hashes, signatures and canonical JSON
   (docs/fairness.md §1, §9).  Classic script: attaches to window.RummyPF. */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});

  const encoder = new TextEncoder();

  function utf8(s) {
    return encoder.encode(s);
  }

  const HEX_RE = /^(?:[0-9a-f]{2})*$/;

  function isHex(s, nBytes) {
    if (typeof s !== "string" || !HEX_RE.test(s)) return false;
    return nBytes === undefined || s.length === 2 * nBytes;
  }

  function hexToBytes(h) {
    if (typeof h !== "string" || !HEX_RE.test(h)) throw new Error("not lowercase hex: " + String(h).slice(0, 80));
    const out = new Uint8Array(h.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(h.substr(2 * i, 2), 16);
    return out;
  }

  function bytesToHex(b) {
    const u = b instanceof Uint8Array ? b : new Uint8Array(b);
    let s = "";
    for (let i = 0; i < u.length; i++) s += (u[i] < 16 ? "0" : "") + u[i].toString(16);
    return s;
  }

  function concat(...parts) {
    let n = 0;
    for (const p of parts) n += p.length;
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }

  /** u32(n): 4 bytes, unsigned big-endian. */
  function u32(n) {
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error("u32 out of range: " + n);
    return new Uint8Array([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
  }

  /** u64(n): 8 bytes, unsigned big-endian (n a safe integer or a BigInt). */
  function u64(n) {
    let v = typeof n === "bigint" ? n : BigInt(n);
    if (v < 0n || v > 0xffffffffffffffffn) throw new Error("u64 out of range: " + n);
    const out = new Uint8Array(8);
    for (let i = 7; i >= 0; i--) {
      out[i] = Number(v & 255n);
      v >>= 8n;
    }
    return out;
  }

  /** LP(b) = u32(len(b)) ‖ b; a string is UTF-8 encoded first. */
  function LP(b) {
    const bytes = typeof b === "string" ? utf8(b) : b;
    return concat(u32(bytes.length), bytes);
  }

  async function sha256(bytes) {
    return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  }

  async function sha256Hex(bytes) {
    return bytesToHex(await sha256(bytes));
  }

  async function hmacKey(keyBytes) {
    return crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  }

  async function hmacSign(key, msg) {
    return new Uint8Array(await crypto.subtle.sign("HMAC", key, msg));
  }

  /** HMAC-SHA256(key, msg) (RFC 2104 with SHA-256). */
  async function hmacSha256(keyBytes, msg) {
    return hmacSign(await hmacKey(keyBytes), msg);
  }

  /** Strict Ed25519 verification (§9, rummypf/ed25519.js): true only for a strict key and
      signature that verify. */
  async function ed25519Verify(publicKey, signature, message) {
    if (!RummyPF.ed25519) throw new Error("rummypf/ed25519.js is not loaded");
    return (await RummyPF.ed25519.verify(publicKey, signature, message)).ok;
  }

  /** Compare two strings by Unicode code point (not UTF-16 code unit). */
  function compareCodePoints(a, b) {
    let i = 0;
    let j = 0;
    while (i < a.length && j < b.length) {
      const ca = a.codePointAt(i);
      const cb = b.codePointAt(j);
      if (ca !== cb) return ca < cb ? -1 : 1;
      i += ca > 0xffff ? 2 : 1;
      j += cb > 0xffff ? 2 : 1;
    }
    if (i < a.length) return 1;
    if (j < b.length) return -1;
    return 0;
  }

  /** canonical(x) (§1): sorted keys, no white space, integers only. Returns a string. */
  function canonical(x) {
    if (x === null) return "null";
    if (x === true) return "true";
    if (x === false) return "false";
    if (typeof x === "number") {
      if (!Number.isSafeInteger(x)) throw new Error("canonical JSON: not a safe integer: " + x);
      return Object.is(x, -0) ? "0" : String(x);
    }
    if (typeof x === "string") return JSON.stringify(x);
    if (Array.isArray(x)) return "[" + x.map(canonical).join(",") + "]";
    if (typeof x === "object") {
      const keys = Object.keys(x).sort(compareCodePoints);
      return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(x[k])).join(",") + "}";
    }
    throw new Error("canonical JSON: unsupported value of type " + typeof x);
  }

  function canonicalBytes(x) {
    return utf8(canonical(x));
  }

  /** A copy of object o without the named keys. */
  function without(o, ...names) {
    const out = Object.create(null);
    for (const k of Object.keys(o)) if (!names.includes(k)) out[k] = o[k];
    return out;
  }

  function has(o, k) {
    return o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k);
  }

  function isPlainObject(x) {
    return x !== null && typeof x === "object" && !Array.isArray(x);
  }

  /** Deep equality of JSON values. */
  function jsonEqual(a, b) {
    if (a === b) return true;
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) return false;
      for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
      return true;
    }
    if (isPlainObject(a)) {
      if (!isPlainObject(b)) return false;
      const ka = Object.keys(a);
      const kb = Object.keys(b);
      if (ka.length !== kb.length) return false;
      for (const k of ka) if (!has(b, k) || !jsonEqual(a[k], b[k])) return false;
      return true;
    }
    return false;
  }

  /** A short printable form of a JSON value for messages. */
  function show(x, limit) {
    let s;
    try {
      s = x === undefined ? "(missing)" : canonical(x);
    } catch (e) {
      s = String(x);
    }
    const n = limit || 400;
    return s.length > n ? s.slice(0, n) + "…" : s;
  }

  RummyPF.bytes = {
    utf8,
    isHex,
    hexToBytes,
    bytesToHex,
    concat,
    u32,
    u64,
    LP,
  };
  RummyPF.crypto = { sha256, sha256Hex, hmacKey, hmacSign, hmacSha256, ed25519Verify };
  RummyPF.canonical = canonical;
  RummyPF.canonicalBytes = canonicalBytes;
  RummyPF.util = { without, has, isPlainObject, jsonEqual, show, compareCodePoints };
})(typeof window !== "undefined" ? window : globalThis);

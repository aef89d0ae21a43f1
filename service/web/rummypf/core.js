/* rummy-pf browser verifier: bytes, hashes, strict Ed25519 signatures and canonical
   JSON (docs/fairness.md §1, §9).  Classic script: attaches to window.RummyPF; every
   page that loads it (the table's too) verifies signatures strictly. */
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

  // ---------------------------------------------------------------- strict Ed25519 (§9)
  // Keys and signatures are judged here, with BigInt arithmetic on the curve, before
  // WebCrypto's verify sees them: a key must be a canonical encoding of a curve point
  // that is not of small order; a signature's S must be below the group order L and
  // its R a canonical encoding.

  const P = (1n << 255n) - 19n;
  const L = (1n << 252n) + 27742317777372353535851937790883648493n;
  const LOW255 = (1n << 255n) - 1n;

  function mod(a) {
    const r = a % P;
    return r < 0n ? r + P : r;
  }

  function pow(b, e) {
    let r = 1n;
    let x = mod(b);
    while (e > 0n) {
      if (e & 1n) r = (r * x) % P;
      x = (x * x) % P;
      e >>= 1n;
    }
    return r;
  }

  const inv = (a) => pow(a, P - 2n);
  const D = mod(-121665n * inv(121666n));
  const D2 = mod(2n * D);
  const SQRT_M1 = pow(2n, (P - 1n) / 4n);

  /** An unsigned little-endian integer from bytes. */
  function littleEndian(bytes) {
    let n = 0n;
    for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]);
    return n;
  }

  /** RFC 8032 §5.1.3: the point of a 32-byte encoding, or the reason there is none. */
  function decodePoint(bytes) {
    const n = littleEndian(bytes);
    const sign = n >> 255n;
    const y = n & LOW255;
    if (y >= P) return { problem: "not a canonical encoding (y ≥ p = 2^255 − 19)" };
    const yy = (y * y) % P;
    const u = mod(yy - 1n);
    const v = mod(D * yy + 1n);
    let x = mod(u * pow(v, 3n) * pow(u * pow(v, 7n), (P - 5n) / 8n));
    const vxx = mod(v * x * x);
    if (vxx === u) {
      // x is a square root of u / v
    } else if (vxx === mod(-u)) {
      x = mod(x * SQRT_M1);
    } else {
      return { problem: "not a point of the curve (no x for this y)" };
    }
    if (x === 0n && sign === 1n) return { problem: "not a canonical encoding (x = 0 with the sign bit set)" };
    if ((x & 1n) !== sign) x = P - x;
    return { point: [x, y, 1n, mod(x * y)] };
  }

  /** Point addition in extended coordinates (RFC 8032 §5.1.4); complete on this curve. */
  function add(p, q) {
    const [X1, Y1, Z1, T1] = p;
    const [X2, Y2, Z2, T2] = q;
    const a = mod((Y1 - X1) * (Y2 - X2));
    const b = mod((Y1 + X1) * (Y2 + X2));
    const c = mod(T1 * D2 * T2);
    const d = mod(2n * Z1 * Z2);
    const e = mod(b - a);
    const f = mod(d - c);
    const g = mod(d + c);
    const h = mod(b + a);
    return [mod(e * f), mod(g * h), mod(f * g), mod(e * h)];
  }

  function isIdentity(p) {
    const [X, Y, Z] = p;
    return X === 0n && Y === Z;
  }

  const keyCache = new Map();

  /** null for a strict public key (§9), else why it is refused. bytes: a Uint8Array. */
  function keyProblem(bytes) {
    if (!(bytes instanceof Uint8Array) || bytes.length !== 32) return "not 32 bytes";
    const hex = bytesToHex(bytes);
    if (keyCache.has(hex)) return keyCache.get(hex);
    const d = decodePoint(bytes);
    let problem = d.problem || null;
    if (!problem) {
      let q = d.point;
      for (let k = 0; k < 3; k++) q = add(q, q);
      if (isIdentity(q)) problem = "a point of small order ([8]P is the identity): one signature would verify for every message";
    }
    keyCache.set(hex, problem);
    return problem;
  }

  /** null for a strict signature R ‖ S (§9), else why it is invalid. */
  function signatureProblem(bytes) {
    if (!(bytes instanceof Uint8Array) || bytes.length !== 64) return "not 64 bytes";
    const s = littleEndian(bytes.subarray(32, 64));
    if (s >= L) return "S ≥ L (S must be below the group order)";
    const r = littleEndian(bytes.subarray(0, 32));
    const y = r & LOW255;
    if (y >= P) return "R is not a canonical encoding (y ≥ p)";
    if ((y === 1n || y === P - 1n) && r >> 255n === 1n) return "R is not a canonical encoding (x = 0 with the sign bit set)";
    return null;
  }

  async function webcryptoVerify(publicKey, signature, message) {
    let key;
    try {
      key = await crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
    } catch (e) {
      return false;
    }
    try {
      return await crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
    } catch (e) {
      return false;
    }
  }

  /** Strict verification: {ok: true} or {ok: false, problem: why}. */
  async function verify(publicKey, signature, message) {
    const kp = keyProblem(publicKey);
    if (kp) return { ok: false, problem: "the key is refused: " + kp };
    const sp = signatureProblem(signature);
    if (sp) return { ok: false, problem: "the signature is invalid: " + sp };
    if (!(await webcryptoVerify(publicKey, signature, message))) return { ok: false, problem: "the signature does not verify" };
    return { ok: true, problem: null };
  }

  /** Strict Ed25519 verification (§9): true only for a strict key and signature that verify. */
  async function ed25519Verify(publicKey, signature, message) {
    return (await verify(publicKey, signature, message)).ok;
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
  RummyPF.ed25519 = { keyProblem, signatureProblem, verify, P, L };
  RummyPF.canonical = canonical;
  RummyPF.canonicalBytes = canonicalBytes;
  RummyPF.util = { without, has, isPlainObject, jsonEqual, show, compareCodePoints };
})(typeof window !== "undefined" ? window : globalThis);

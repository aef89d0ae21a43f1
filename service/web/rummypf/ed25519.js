/* rummy-pf browser verifier: strict Ed25519 (docs/fairness.md §9).
   Keys and signatures are judged here, with BigInt arithmetic on the curve, before
   WebCrypto's verify sees them: a key must be a canonical encoding of a curve point
   that is not of small order; a signature's S must be below the group order L and
   its R a canonical encoding.  Classic script: attaches to window.RummyPF.ed25519. */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});

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
    const hex = RummyPF.bytes.bytesToHex(bytes);
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

  RummyPF.ed25519 = { keyProblem, signatureProblem, verify, P, L };
})(typeof window !== "undefined" ? window : globalThis);

/* rummy-pf browser verifier: the strict JSON reader (docs/fairness.md §2).
   Input that breaks a rule is unreadable: a ReadError is thrown. */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});

  const MAX_BYTES = 16 * 1024 * 1024;
  const MAX_DEPTH = 64;
  const MAX_SAFE = 9007199254740991; // 2^53 - 1

  class ReadError extends Error {
    constructor(message) {
      super(message);
      this.name = "ReadError";
    }
  }

  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  /** The number of UTF-8 bytes of a well-formed string, counting no further than limit + 1. */
  function utf8Length(s, limit) {
    let n = 0;
    for (let i = 0; i < s.length && n <= limit; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) n += 1;
      else if (c < 0x800) n += 2;
      else if (c >= 0xd800 && c <= 0xdbff) {
        n += 4;
        i++;
      } else n += 3;
    }
    return n;
  }

  function parse(text, options) {
    const maxBytes = (options && options.maxBytes) || MAX_BYTES;
    if (typeof text !== "string") throw new ReadError("input is not text");
    // Every UTF-16 unit is at least one UTF-8 byte: a longer string is refused unread.
    if (text.length > maxBytes || utf8Length(text, maxBytes) > maxBytes) {
      throw new ReadError("input larger than " + maxBytes + " bytes");
    }
    if (LONE_SURROGATE.test(text)) throw new ReadError("input is not UTF-8 (a lone surrogate)");
    if (text.charCodeAt(0) === 0xfeff) throw new ReadError("a byte order mark before the JSON text");
    let pos = 0;
    const n = text.length;

    function fail(msg) {
      throw new ReadError(msg + " at offset " + pos);
    }
    function ws() {
      while (pos < n) {
        const c = text.charCodeAt(pos);
        if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) pos++;
        else break;
      }
    }
    function value(depth) {
      ws();
      if (pos >= n) fail("unexpected end of input");
      const c = text[pos];
      if (c === "{") return object(depth + 1);
      if (c === "[") return array(depth + 1);
      if (c === '"') return string();
      if (c === "-" || (c >= "0" && c <= "9")) return number();
      if (text.startsWith("true", pos)) {
        pos += 4;
        return true;
      }
      if (text.startsWith("false", pos)) {
        pos += 5;
        return false;
      }
      if (text.startsWith("null", pos)) {
        pos += 4;
        return null;
      }
      return fail("unexpected character " + JSON.stringify(c));
    }
    function object(depth) {
      if (depth > MAX_DEPTH) fail("nesting deeper than " + MAX_DEPTH);
      pos++; // {
      const out = Object.create(null);
      ws();
      if (text[pos] === "}") {
        pos++;
        return out;
      }
      for (;;) {
        ws();
        if (text[pos] !== '"') fail("expected a string key");
        const key = string();
        if (Object.prototype.hasOwnProperty.call(out, key)) fail("duplicate key " + JSON.stringify(key));
        ws();
        if (text[pos] !== ":") fail("expected ':'");
        pos++;
        const v = value(depth);
        Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
        ws();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === "}") {
          pos++;
          return out;
        }
        fail("expected ',' or '}'");
      }
    }
    function array(depth) {
      if (depth > MAX_DEPTH) fail("nesting deeper than " + MAX_DEPTH);
      pos++; // [
      const out = [];
      ws();
      if (text[pos] === "]") {
        pos++;
        return out;
      }
      for (;;) {
        out.push(value(depth));
        ws();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === "]") {
          pos++;
          return out;
        }
        fail("expected ',' or ']'");
      }
    }
    function hex4() {
      const h = text.substr(pos, 4);
      if (!/^[0-9a-fA-F]{4}$/.test(h)) fail("bad \\u escape");
      pos += 4;
      return parseInt(h, 16);
    }
    function string() {
      pos++; // opening quote
      let out = "";
      let start = pos;
      for (;;) {
        if (pos >= n) fail("unterminated string");
        const c = text.charCodeAt(pos);
        if (c === 0x22) {
          out += text.slice(start, pos);
          pos++;
          return out;
        }
        if (c < 0x20) fail("unescaped control character in a string");
        if (c !== 0x5c) {
          pos++;
          continue;
        }
        out += text.slice(start, pos);
        pos++;
        const e = text[pos];
        pos++;
        switch (e) {
          case '"':
            out += '"';
            break;
          case "\\":
            out += "\\";
            break;
          case "/":
            out += "/";
            break;
          case "b":
            out += "\b";
            break;
          case "f":
            out += "\f";
            break;
          case "n":
            out += "\n";
            break;
          case "r":
            out += "\r";
            break;
          case "t":
            out += "\t";
            break;
          case "u": {
            const u = hex4();
            if (u >= 0xd800 && u <= 0xdbff) {
              if (text[pos] !== "\\" || text[pos + 1] !== "u") fail("unpaired surrogate escape");
              pos += 2;
              const lo = hex4();
              if (lo < 0xdc00 || lo > 0xdfff) fail("unpaired surrogate escape");
              out += String.fromCharCode(u, lo);
            } else if (u >= 0xdc00 && u <= 0xdfff) {
              fail("unpaired surrogate escape");
            } else {
              out += String.fromCharCode(u);
            }
            break;
          }
          default:
            pos--;
            fail("bad escape");
        }
        start = pos;
      }
    }
    function number() {
      const m = /^-?(?:0|[1-9][0-9]*)/.exec(text.slice(pos, pos + 40));
      if (!m) fail("bad number");
      const s = m[0];
      const after = text[pos + s.length];
      if (after === "." || after === "e" || after === "E") fail("a number that is not an integer");
      if (after !== undefined && after >= "0" && after <= "9") fail("a number too large");
      if (s === "-0") fail("-0 is not allowed");
      const digits = s[0] === "-" ? s.slice(1) : s;
      if (digits.length > 16 || Number(digits) > MAX_SAFE) fail("an integer beyond 2^53 - 1");
      pos += s.length;
      return Number(s);
    }

    const v = value(0);
    ws();
    if (pos !== n) fail("text after the JSON value");
    return v;
  }

  /** Decode bytes as UTF-8 strictly (refusing more than maxBytes unread), then parse. */
  function parseBytes(bytes, options) {
    const maxBytes = (options && options.maxBytes) || MAX_BYTES;
    if (bytes.length > maxBytes) throw new ReadError("input larger than " + maxBytes + " bytes");
    let text;
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch (e) {
      throw new ReadError("input is not UTF-8");
    }
    return parse(text, options);
  }

  RummyPF.jsonStrict = { parse, parseBytes, ReadError, MAX_BYTES, MAX_DEPTH };
})(typeof window !== "undefined" ? window : globalThis);

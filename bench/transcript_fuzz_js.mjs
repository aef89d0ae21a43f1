#!/usr/bin/env node
/* The browser verifier (service/web/rummypf/*.js) in a node vm context, for
   bench/transcript_fuzz/node.py: reads a JSON array of cases from the file named by argv[2]
   ({"b64": the transcript's bytes, "allow_v1": bool, "key": hex or null,
   "evidence_b64": bytes or null}) and writes one verdict a line to stdout:
   {"ok", "check", "record", "message", "warnings"}.

   The scripts are loaded in the page's order (verify.js before the files that register
   their checks with it).  Node 20's webcrypto has Ed25519, as Chromium's has.  The
   transcript is passed as bytes (Uint8Array), as the page passes a dropped file. */
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import { webcrypto } from "node:crypto";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const WEB = join(ROOT, "service", "web", "rummypf");
const SCRIPTS = [
  "core.js",
  "json.js",
  "cards.js",
  "fairness.js",
  "groups.js",
  "arrange.js",
  "hand.js",
  "verify.js",
  "verify-format.js",
  "verify-play.js",
  "verify-evidence.js",
];

function loadRummyPF() {
  const sandbox = { crypto: webcrypto, TextEncoder, TextDecoder, console, Uint8Array, ArrayBuffer };
  sandbox.globalThis = sandbox;
  sandbox.window = sandbox;
  const ctx = vm.createContext(sandbox);
  for (const f of SCRIPTS) vm.runInContext(readFileSync(join(WEB, f), "utf8"), ctx, { filename: join(WEB, f) });
  return ctx.RummyPF;
}

const R = loadRummyPF();
const bytesOf = (b64) => new Uint8Array(Buffer.from(b64, "base64"));
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const c of cases) {
  let v;
  try {
    const opts = { allowV1: c.allow_v1 === true };
    if (c.key) opts.key = c.key;
    if (c.evidence_b64) opts.evidence = bytesOf(c.evidence_b64);
    const r = await R.verifyTranscript(bytesOf(c.b64), opts);
    const f = r.failure;
    v = {
      ok: r.ok,
      check: f ? f.check : null,
      record: f ? f.record : null,
      item: f && f.item !== undefined ? f.item : null,
      message: f ? String(f.message).slice(0, 300) : null,
      warnings: r.warnings.map((w) => w.code),
    };
  } catch (e) {
    v = { ok: false, check: "THROWN", record: null, item: null, message: String(e && e.stack ? e.stack : e).slice(0, 300), warnings: [] };
  }
  out.push(JSON.stringify(v));
}
process.stdout.write(out.join("\n") + "\n");

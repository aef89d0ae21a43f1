"""A differential fuzzer of the two transcript verifiers: ``rummy-verify`` (Python,
``verifier/``) and the browser verifier (JavaScript, ``service/web/rummypf/*.js``, run in
node by ``bench/transcript_fuzz_js.mjs``).

It takes the vectors' transcripts (``verifier/vectors/*.json``, ``adversarial/*.json``,
their folders' hands) and a few honest hands it plays itself (random legal moves, rules
at the bounds of §13), and mutates them as a house that holds its own key could: any
field of the transcript, the header, the rules, the seats, the times, the seeds, the
records and their order, the events, the result and the settlement; types (a number
for a string, ``true`` for 1, big integers, floats), extra and missing fields.  It then
re-signs what the house can sign — the header, the commitments, the chain, the head,
the transcript — and, since a house can list keys of its own for the seats (only a
player's evidence shows it, §15 rule 3), usually every player move too, under keys it
holds.  A few mutants are then changed as raw JSON text (escapes, white space,
duplicate keys, ``-0``, ``1.0``, a byte order mark, deep nesting…), or verified with a
pinned key.  Both verifiers read the same bytes; their verdicts are compared: ok or
not, the failing check, the record and the evidence item it names, and the warnings of
a passing verdict.

Hands played here carry a seat's evidence (or every seat's), with refusals of the
house's and of the rules' (§15 rule 7); with ``--focus evidence`` every mutant is
verified with it, so a transcript the house re-publishes is held against what a
player kept.  ``--sweep`` replaces the random mutants by a systematic sweep: every type
and edge variant of the first value at each field pattern of a few vectors (§13's
types, where a random mutant reaches each field rarely).

    python -m bench.transcript_fuzz [--seed N] [--mutants N] [--focus evidence|v1] [--sweep]
                                    [--jobs N] [--json FILE] [--dump DIR] [-v]

Deterministic for a seed.  A difference is one of three kinds (``compare``): a record
the spec does not name (``unspecified``: which problem ``format`` names first, the
record of a pinned key or of the head — counted, not a disagreement); a known open
disagreement (``KNOWN_OPEN``, each a strict xfail of the pytest test); or a new
disagreement, printed by class with the smallest mutant of each (exit 1).  ``REPROS``
holds one minimal repro of each class found, with the verdict docs/fairness.md gives.
The same mutants are the pytest test's (``tests/test_web_verifier_transcript_fuzz.py``),

The modules, each importing only those above it:

- ``common``: paths, protocols, the default seed, a deep copy, a mutation's type;
- ``seal``: the keys, signing, and re-sealing a changed hand as the house would;
- ``hands``: the hands mutated (the vectors' and honest hands played here);
- ``paths``, ``variants``: paths in a value, and the variants put in place of one;
- ``mutate_transcript``, ``mutate_log``, ``mutate_result``, ``mutate_evidence``: the
  mutations (the transcript and header; the log; the outcome; against a seat's evidence);
- ``after_seal``: changes after sealing, and the mutant written as (raw) JSON text;
- ``mutant``: one mutant of a seed (``make_mutant``); ``sweep``: the ``--sweep`` mutants;
- ``verdicts``: rummy-verify's verdicts; ``node``: the browser verifier's, in node;
- ``compare``: two verdicts compared and classed (``KNOWN_OPEN``);
- ``repros``: one minimal repro of each class found (``REPROS``);
- ``cli``: the command (``__main__`` runs it).
"""

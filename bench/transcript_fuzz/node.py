"""The browser verifier's verdicts on the mutants, in node (``bench/transcript_fuzz_js.mjs``)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

from bench.transcript_fuzz.common import ROOT
from bench.transcript_fuzz.mutant import Mutant
from bench.transcript_fuzz.verdicts import Verdict

NODE_RUNNER = ROOT / "bench" / "transcript_fuzz_js.mjs"


def node_verdicts(ms: list[Mutant], node: str = "node", chunk: int = 400) -> list[Verdict]:
    """The browser verifier's verdicts, in node (``bench/transcript_fuzz_js.mjs``), ``chunk``
    mutants a process."""
    verdicts: list[Verdict] = []
    for k in range(0, len(ms), chunk):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump([m.case() for m in ms[k : k + chunk]], f)
            path = f.name
        try:
            out = subprocess.run([node, str(NODE_RUNNER), path], capture_output=True, text=True, check=True)
        finally:
            os.unlink(path)
        verdicts += [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return verdicts

"""``python -m bench.transcript_fuzz``: the mutants made, both verifiers' verdicts,
the counts and each class of difference printed.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from collections import Counter, defaultdict

import bench.transcript_fuzz
from bench.transcript_fuzz.common import SEED
from bench.transcript_fuzz.compare import compare
from bench.transcript_fuzz.hands import bases
from bench.transcript_fuzz.mutant import make_mutant
from bench.transcript_fuzz.node import node_verdicts
from bench.transcript_fuzz.sweep import sweep_mutants
from bench.transcript_fuzz.verdicts import python_verdicts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.transcript_fuzz", description=bench.transcript_fuzz.__doc__.split("\n\n")[0]
    )
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--mutants", type=int, default=3000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write every disagreement here")
    ap.add_argument("--dump", help="write the smallest mutant of each class into this folder")
    ap.add_argument("--focus", choices=["", "evidence", "v1"], default="")
    ap.add_argument("--sweep", action="store_true", help="the systematic sweep of every field pattern instead")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    if args.sweep:
        ms = sweep_mutants(args.seed)
    else:
        ms = [make_mutant(n, args.seed, args.focus) for n in range(args.start, args.start + args.mutants)]
    t1 = time.monotonic()
    js = node_verdicts(ms)
    t2 = time.monotonic()
    py = python_verdicts(ms, args.jobs)
    t3 = time.monotonic()
    took = f"made in {t1 - t0:.1f} s; JavaScript {t2 - t1:.1f} s, Python {t3 - t2:.1f} s"
    print(f"{len(ms)} mutants of {len(bases(args.seed))} hands ({took})")
    classes: dict[tuple[str, str], list[int]] = defaultdict(list)
    verdicts: Counter[str] = Counter()
    for k, (m, p, j) in enumerate(zip(ms, py, js, strict=True)):
        verdicts["ok" if p["ok"] else str(p["check"])] += 1
        c = compare(m, p, j)
        if c is not None:
            classes[c].append(k)
    n = {
        kind: sum(len(v) for (kd, _), v in classes.items() if kd == kind)
        for kind in ("unspecified", "known", "disagree")
    }
    print(
        f"exactly the same verdict {len(ms) - sum(n.values())}; the same but for a record the spec does not name "
        f"{n['unspecified']}; known open disagreements {n['known']}; new disagreements {n['disagree']}"
    )
    print("python's verdicts: " + ", ".join(f"{check} {count}" for check, count in verdicts.most_common()))
    out = []
    for (kind, name), ks in sorted(classes.items(), key=lambda kv: (kv[0][0] != "disagree", -len(kv[1]))):
        smallest = min(ks, key=lambda k: (len(ms[k].what), len(ms[k].data)))
        m = ms[smallest]
        print(f"\n[{len(ks)}] {kind}: {name}")
        print(f"  smallest: mutant {m.n} of {m.base}: {'; '.join(m.what)}")
        print(f"    python: {py[smallest]['check']} at {py[smallest]['record']}: {py[smallest]['message']}")
        print(f"    js:     {js[smallest]['check']} at {js[smallest]['record']}: {js[smallest]['message']}")
        if args.verbose:
            for k in ks[:20]:
                print(f"    mutant {ms[k].n} of {ms[k].base}: {'; '.join(ms[k].what)}")
        out.append({"kind": kind, "class": name, "count": len(ks), "mutants": [ms[k].n for k in ks], "smallest": m.n})
        if args.dump:
            d = pathlib.Path(args.dump)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"mutant-{m.n}.json").write_bytes(m.data)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1))
    return 1 if n["disagree"] else 0

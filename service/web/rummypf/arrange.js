/* rummy-pf browser verifier: the count of a hand and valid declares
   (docs/fairness.md Appendix B.2, RULES.md D11, D13).

   An exact search, written for this verifier: every subset of the hand (2^n, n ≤ 16)
   is classified once as a group or not, then a dynamic programme over the set of
   cards not yet decided finds the best arrangement.  At each state the lowest
   undecided card is either loose or in one group made of it and other undecided
   cards; every arrangement is a sequence of such choices, so the maximum is exact.
   The state also carries (sequences so far, capped at 2; a pure one so far). */
(function (root) {
  "use strict";
  const RummyPF = (root.RummyPF = root.RummyPF || {});
  const { value } = RummyPF.cards;
  const { classify } = RummyPF.groups;

  const KIND = { set: 1, impure: 2, pure: 3 };
  const NEG = -1; // "no arrangement from here satisfies the condition"
  const UNKNOWN = -2;

  function analyse(cards, wildRank) {
    const n = cards.length;
    if (n > 16) throw new Error("too many cards to count: " + n);
    const full = (1 << n) - 1;
    const vals = cards.map((c) => value(c, wildRank));
    const kind = new Int8Array(1 << n);
    const mval = new Int16Array(1 << n);
    let bestPure = -1;
    let bestPureMask = 0;
    for (let m = 1; m <= full; m++) {
      const low = m & -m;
      mval[m] = mval[m ^ low] + vals[31 - Math.clz32(low)];
      let bits = 0;
      for (let x = m; x; x &= x - 1) bits++;
      if (bits < 3) continue;
      const sub = [];
      for (let i = 0; i < n; i++) if (m & (1 << i)) sub.push(cards[i]);
      const k = classify(sub, wildRank);
      if (k) {
        kind[m] = KIND[k];
        if (k === "pure" && mval[m] > bestPure) {
          bestPure = mval[m];
          bestPureMask = m;
        }
      }
    }
    return { n, full, vals, kind, mval, bestPure, bestPureMask };
  }

  function nextFlags(f, k) {
    let seq = f >> 1;
    let pure = f & 1;
    if (k >= 2) seq = Math.min(seq + 1, 2);
    if (k === 3) pure = 1;
    return (seq << 1) | pure;
  }

  const DONE = (2 << 1) | 1; // two sequences, one pure

  /** (a): the largest value of grouped cards over arrangements with ≥ 2 sequences, ≥ 1 pure. */
  function searchA(A) {
    const memo = new Int16Array((A.full + 1) * 6).fill(UNKNOWN);
    function best(mask, f) {
      if (mask === 0) return f === DONE ? 0 : NEG;
      const key = mask * 6 + f;
      const got = memo[key];
      if (got !== UNKNOWN) return got;
      const low = mask & -mask;
      const rest = mask ^ low;
      let res = best(rest, f); // the lowest card stays loose
      for (let sub = rest; ; sub = (sub - 1) & rest) {
        const g = sub | low;
        const k = A.kind[g];
        if (k && A.mval[g] + A.mval[mask ^ g] > res) {
          const r = best(mask ^ g, nextFlags(f, k));
          if (r !== NEG && r + A.mval[g] > res) res = r + A.mval[g];
        }
        if (sub === 0) break;
      }
      memo[key] = res;
      return res;
    }
    const v = best(A.full, 0);
    if (v === NEG) return null;
    // rebuild one arrangement reaching v
    const groups = [];
    const loose = [];
    let mask = A.full;
    let f = 0;
    let need = v;
    while (mask) {
      const low = mask & -mask;
      const rest = mask ^ low;
      if (best(rest, f) === need) {
        loose.push(low);
        mask = rest;
        continue;
      }
      let found = false;
      for (let sub = rest; ; sub = (sub - 1) & rest) {
        const g = sub | low;
        const k = A.kind[g];
        if (k) {
          const f2 = nextFlags(f, k);
          const r = best(mask ^ g, f2);
          if (r !== NEG && r + A.mval[g] === need) {
            groups.push(g);
            mask ^= g;
            f = f2;
            need = r;
            found = true;
            break;
          }
        }
        if (sub === 0) break;
      }
      if (!found) throw new Error("arrangement search: cannot rebuild");
    }
    return { grouped: v, groups, loose };
  }

  /** Valid declare: every card in a group, ≥ 2 sequences, ≥ 1 pure. Returns group masks or null. */
  function searchDeclare(A) {
    const memo = new Int8Array((A.full + 1) * 6); // 0 unknown, 1 yes, 2 no
    function ok(mask, f) {
      if (mask === 0) return f === DONE;
      const key = mask * 6 + f;
      if (memo[key]) return memo[key] === 1;
      const low = mask & -mask;
      const rest = mask ^ low;
      let res = false;
      for (let sub = rest; ; sub = (sub - 1) & rest) {
        const g = sub | low;
        const k = A.kind[g];
        if (k && ok(mask ^ g, nextFlags(f, k))) {
          res = true;
          break;
        }
        if (sub === 0) break;
      }
      memo[key] = res ? 1 : 2;
      return res;
    }
    if (!ok(A.full, 0)) return null;
    const groups = [];
    let mask = A.full;
    let f = 0;
    while (mask) {
      const low = mask & -mask;
      const rest = mask ^ low;
      for (let sub = rest; ; sub = (sub - 1) & rest) {
        const g = sub | low;
        const k = A.kind[g];
        if (k && ok(mask ^ g, nextFlags(f, k))) {
          groups.push(g);
          mask ^= g;
          f = nextFlags(f, k);
          break;
        }
        if (sub === 0) throw new Error("declare search: cannot rebuild");
      }
    }
    return groups;
  }

  function maskToIndices(m) {
    const out = [];
    for (let i = 0; m; i++, m >>>= 1) if (m & 1) out.push(i);
    return out;
  }

  /** Is this hand a valid declare (B.2)? Returns {valid, groups (index lists)}. */
  function validDeclare(cards, wildRank) {
    const A = analyse(cards, wildRank);
    const g = searchDeclare(A);
    return { valid: g !== null, groups: g ? g.map(maskToIndices) : null };
  }

  /** The count of a hand (B.2, D13) with one arrangement that shows it (B.3).
      Returns {points, valid_declare, groups: [[index…]…], loose: [index…], total, case}. */
  function count(cards, wildRank) {
    const A = analyse(cards, wildRank);
    const total = A.mval[A.full];
    const decl = searchDeclare(A);
    if (decl) {
      return { points: 0, valid_declare: true, groups: decl.map(maskToIndices), loose: [], total, case: "a" };
    }
    let points = total;
    let kase = "c";
    let groups = [];
    let loose = maskToIndices(A.full);
    if (A.bestPure >= 0 && total - A.bestPure < points) {
      points = total - A.bestPure;
      kase = "b";
      groups = [maskToIndices(A.bestPureMask)];
      loose = maskToIndices(A.full ^ A.bestPureMask);
    }
    const a = searchA(A);
    if (a && total - a.grouped < points) {
      points = total - a.grouped;
      kase = "a";
      groups = a.groups.map(maskToIndices);
      loose = a.loose.map((m) => 31 - Math.clz32(m));
    }
    return { points, valid_declare: false, groups, loose, total, case: kase };
  }

  RummyPF.arrange = { count, validDeclare, analyse };
})(typeof window !== "undefined" ? window : globalThis);

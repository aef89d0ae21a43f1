"""Best arrangement of a hand (RULES.md D11, D13): exact minimum points.

The approach (see docs/scoring.md for the argument that it is exact)
---------------------------------------------------------------------
Points are the minimum over three counting cases (D13):

(a) at least two sequences, one of them pure: only ungrouped cards count;
(b) a pure sequence but no valid (a): every card counts but the one most valuable
    pure run;
(c) every card counts.

(b) and (c) are closed formulas.  (a) is a search: maximise the value of the grouped
cards over every way of splitting the hand into non-overlapping valid groups plus
loose cards, subject to "≥ 2 sequences, ≥ 1 pure".

The cards are put in a fixed order — wild-rank cards ("flex" cards) first, then the
other natural cards by suit and rank — and a memoised recursion decides the fate of
the *first remaining* card, trying every group that can contain it:

* a flex card becomes a wild card (it joins the pool of interchangeable wilds with
  the printed jokers), or stands as itself in a pure run with other natural cards
  (D6).  As itself in an impure run or a set it is indistinguishable from a wild
  standing in for its own face, so nothing is lost by not trying that;
* any other card is left loose, or joins a set of its rank (with naturals of later
  suits, and wild cards for missing suits), or a run of its suit: every subset of
  the remaining naturals of that suit above it whose gaps the free wild cards can
  fill (skipping a natural and using a wild in its place is tried too, because the
  natural may be worth more in a set).  A run of one natural and two wilds dominates
  the set of one natural and two wilds, so the latter is not tried.
* when no natural is left, the wild cards left over form one all-wild impure
  sequence if there are three or more (D7), or stay loose.

Copies of one face (two or three decks) are interchangeable, so a group always takes
the first free copy of each face and a card left loose (or turned wild) takes its
later copies with it; every arrangement has a relabelling of that form.

Every group that can contain the first remaining card is tried, so every
arrangement is reached; the memo key (remaining cards, free wilds, sequences so far
capped at 2, pure-so-far) captures all the recursion depends on.  Wild cards never
cost points, so a group never needs more wild cards than the minimum that makes it
valid; a loose wild card at the end is put into a sequence for display (there is
always room: see docs/scoring.md), and a hand is a valid declare exactly when (a)
is feasible with zero points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from verifier.cards import Card, card_value


class Case(StrEnum):
    SEQUENCES = "a"  # ≥ 2 sequences with ≥ 1 pure: only loose cards count
    PURE_ONLY = "b"  # a pure run spared, everything else counts
    NOTHING = "c"  # every card counts


@dataclass(frozen=True, slots=True)
class Arrangement:
    """The result of :func:`best_arrangement`.

    ``groups`` and ``loose`` hold indices into the hand that was passed in, so the
    caller can map them back to physical card ids; together they use every index
    exactly once.  ``points`` equals the sum of the loose cards' values.
    """

    points: int
    valid_declare: bool
    case: Case
    groups: tuple[tuple[int, ...], ...]
    loose: tuple[int, ...]

    def faces(self, hand: Sequence[Card]) -> tuple[list[list[str]], list[str]]:
        return ([[str(hand[i]) for i in g] for g in self.groups], [str(hand[i]) for i in self.loose])


_NEG = -(10**6)


# -value, wilds needed, 0 sequence / 1 set, used mask, lower copies of the used faces
_Entry = tuple[int, int, int, int, int]


class _Search:
    """One best-arrangement search over one hand (the (a) case).

    Bit ``b`` of a mask stands for card ``order[b]``: wild-rank ("flex") cards first,
    then the other naturals by suit and rank.  Printed jokers are not in the mask:
    they, and flex cards turned wild, are a count of interchangeable wild cards.
    """

    def __init__(self, hand: Sequence[Card], wild_rank: int | None, values: Sequence[int]) -> None:
        # A printed joker has rank -1, never a wild rank (0…12 or None).
        flex = [i for i, c in enumerate(hand) if c.rank == wild_rank]
        nat = sorted(
            (i for i, c in enumerate(hand) if c.rank >= 0 and c.rank != wild_rank),
            key=lambda i: (hand[i].suit, hand[i].rank),
        )
        self.jokers = [i for i, c in enumerate(hand) if c.rank < 0]
        self.order = flex + nat
        self.n = n = len(self.order)
        self.nflex = len(flex)
        self.value = [values[i] for i in self.order]
        suit = [hand[i].suit for i in self.order]
        rank = [hand[i].rank for i in self.order]
        # at[suit][position 1..14] -> bits holding that face (its copies).
        at: list[list[list[int]]] = [[[] for _ in range(15)] for _ in range(4)]
        for b in range(n):
            at[suit[b]][rank[b] + 1].append(b)
            if rank[b] == 0:
                at[suit[b]][14].append(b)
        self.suit, self.rank, self.at = suit, rank, at
        # Copies of one face (two or three decks) are interchangeable: a group takes
        # the first free copy of each face, and a card left loose (or turned wild)
        # takes its later copies with it.  lower[b] / later[b]: b's copies before / after it.
        self.lower = [0] * n
        self.later = [0] * n
        for b in range(n):
            for y in at[suit[b]][rank[b] + 1]:
                if y < b:
                    self.lower[b] |= 1 << y
                elif y > b:
                    self.later[b] |= 1 << y
        self.max_wilds = max_wilds = len(self.jokers) + self.nflex
        # groups[b]: every group card b can head, best value first (so a perfect
        # answer is met early), made when b first heads a state and filtered at run
        # time by the cards still free.
        self.groups: list[list[_Entry] | None] = [None] * n
        self.memo: dict[int, tuple[int, tuple[object, ...] | None]] = {}
        # Cards that no group can hold are settled before the search: a natural stays
        # loose, a wild-rank card becomes a wild card.  The test is generous (it
        # keeps every card some group might hold): a group holding a natural b needs
        # two wild cards, or another natural of b's rank, or another natural of b's
        # suit within max_wilds + 1 positions; a pure run through a wild-rank card
        # needs a natural next to it.
        nflex = self.nflex
        start = 0
        for b in range(n):
            ok = b >= nflex and (max_wilds >= 2 or any(at[s2][rank[b] + 1] for s2 in range(4) if s2 != suit[b]))
            if not ok:
                row = at[suit[b]]
                reach = 1 if b < nflex else max_wilds + 1
                for p in (1, 14) if rank[b] == 0 else (rank[b] + 1,):
                    for d in range(1, reach + 1):
                        if (p - d >= 1 and row[p - d]) or (p + d <= 14 and row[p + d]):
                            ok = True
            if ok:
                start |= 1 << b
        self.start_mask = start
        # For pruning states that can no longer meet (a): every pure run of three
        # (wild-rank cards as themselves) and every pair of naturals of one suit
        # within two positions (the makings of a sequence with one wild card).
        self.flex_mask = (1 << nflex) - 1
        self.pure3: list[int] = []
        self.pairs: list[int] = []
        for b in range(n):
            row = at[suit[b]]
            p = rank[b] + 1
            bit = 1 << b
            for y in row[p + 1] if p < 14 else ():
                self.pairs.append(bit | 1 << y)
                for z in row[p + 2] if p < 13 else ():
                    self.pure3.append(bit | 1 << y | 1 << z)
            for y in row[p + 2] if p < 13 else ():
                self.pairs.append(bit | 1 << y)
        self.pre_wild = [self.order[b] for b in range(self.nflex) if not start >> b & 1]
        self.start_wilds = len(self.jokers) + len(self.pre_wild)

    def _groups_of(self, b: int) -> list[_Entry]:
        suit, rank, at = self.suit, self.rank, self.at
        out: list[_Entry] = []
        if b < self.nflex:
            self._pure_runs_through(b, suit[b], rank[b], at, out)
        else:
            self._sets_from(b, suit[b], rank[b], at, out)
            for p0, step in ((1, 1), (14, -1)) if rank[b] == 0 else ((rank[b] + 1, 1),):
                self._runs_from(b, p0, step, out)
        out.sort()
        self.groups[b] = out
        return out

    # -- candidate groups (D6–D10) ---------------------------------------------------
    # An entry is (-value, wilds needed, 0 for a sequence / 1 for a set, used mask):
    # plain sorting puts the most valuable first, sequences before sets.
    def _lower_of(self, used: int) -> int:
        """The earlier copies of the faces in ``used``: a group must not skip them."""
        low = 0
        while used:
            bit = used & -used
            low |= self.lower[bit.bit_length() - 1]
            used ^= bit
        return low

    def _mask_value(self, used: int) -> int:
        val = 0
        while used:
            low = used & -used
            val += self.value[low.bit_length() - 1]
            used ^= low
        return val

    def _pure_runs_through(self, b: int, s: int, r: int, at: list[list[list[int]]], out: list[_Entry]) -> None:
        """Pure runs (D6, D9) of natural cards (wild-rank cards as themselves) through b."""
        row = at[s]
        for pos in (1, 14) if r == 0 else (r + 1,):
            lo_edge, hi_edge = (2, 14) if pos == 14 else (1, 13 if pos == 1 else 14)
            lo = pos
            while lo - 1 >= lo_edge and row[lo - 1]:
                lo -= 1
            hi = pos
            while hi + 1 <= hi_edge and row[hi + 1]:
                hi += 1
            for a in range(lo, pos + 1):
                for z in range(max(pos, a + 2), hi + 1):
                    if z - a + 1 > 13:
                        continue  # never both aces (D9)
                    combos = [1 << b]
                    for p in range(a, z + 1):
                        if p != pos:
                            combos = [c | 1 << x for c in combos for x in row[p] if x != b]
                    for used in combos:
                        out.append((-self._mask_value(used), 0, 0, used, self._lower_of(used)))

    def _sets_from(self, b: int, s: int, r: int, at: list[list[list[int]]], out: list[_Entry]) -> None:
        """Sets (D8, D10) headed by b: one copy of its rank from each of some later suits."""
        value, lower = self.value, self.lower
        partial = [(1 << b, value[b], 1, 0)]
        for s2 in range(s + 1, 4):
            partial += [
                (u | 1 << x, v + value[x], n + 1, lo | lower[x]) for u, v, n, lo in partial for x in at[s2][r + 1]
            ]
        for used, val, n, low in partial:
            if n >= 2:  # one natural and two wilds is dominated by a run (D26)
                out.append((-val, 3 - n if n < 3 else 0, 1, used, low))

    def _runs_from(self, b: int, p0: int, step: int, out: list[_Entry]) -> None:
        """Runs (D6, D7, D9) headed by b at position p0, going up (down from an ace
        played high): b with any subset of later naturals of its suit whose gaps,
        and whose shortness below three cards, wild cards can make up."""
        row = self.at[self.suit[b]]
        nflex, value, max_wilds = self.nflex, self.value, self.max_wilds
        lo_edge = 2 if p0 == 14 else 1  # never both aces in one run (D9)
        hi_edge = 13 if p0 == 1 else 14
        lower = self.lower
        # stack of (used mask, value, cards, last position, gaps so far, earlier copies)
        stack = [(1 << b, value[b], 1, p0, 0, 0)]
        while stack:
            used, val, n, p, gaps, low = stack.pop()
            span = p - p0 + 1 if step > 0 else p0 - p + 1
            need = (3 if span < 3 else span) - n
            if need <= max_wilds:
                out.append((-val, need, 0, used, low))
            q = p + step
            while lo_edge <= q <= hi_edge:
                g = gaps + (q - p if step > 0 else p - q) - 1
                if g > max_wilds:
                    break
                for x in row[q]:
                    if x >= nflex:
                        stack.append((used | 1 << x, val + value[x], n + 1, q, g, low | lower[x]))
                q += step

    # -- the recursion -------------------------------------------------------------
    def _has_sequence(self, mask: int, wilds: int) -> bool:
        """Could the cards in ``mask`` and ``wilds`` wild cards hold a sequence?
        Generous: wild-rank cards in the mask count as wild cards too."""
        w = wilds + (mask & self.flex_mask).bit_count()
        if w >= 3 or (w == 2 and mask):
            return True
        if w == 1:
            for p in self.pairs:
                if not p & ~mask:
                    return True
        for r in self.pure3:
            if not r & ~mask:
                return True
        return False

    def _feasible(self, mask: int, wilds: int, nseq: int, pure: int) -> bool:
        """A necessary condition for reaching ≥ 2 sequences with ≥ 1 pure from here."""
        if pure:
            return nseq >= 2 or self._has_sequence(mask, wilds)
        for r in self.pure3:
            if not r & ~mask and (nseq >= 1 or self._has_sequence(mask & ~r, wilds)):
                return True
        return False

    def run(self) -> int:
        """Most value case (a) can group, or _NEG if (a) cannot be met.

        The recursion is branch and bound, fail-soft: a result above ``alpha`` is
        exact; a result at or below it is only an upper bound (the caller already
        has something at least as good).  Exact results are memoised with the
        choice that made them, for :func:`_reconstruct`.  ``ceiling`` is the value
        of every card left: nothing can beat it.  ``nseq`` is capped at 2.
        """
        memo = self.memo
        groups_of = self.groups
        value = self.value
        nflex = self.nflex
        feasible = self._feasible
        flex_mask = self.flex_mask
        later = self.later
        make_groups = self._groups_of

        def best(mask: int, wilds: int, nseq: int, pure: int, alpha: int, ceiling: int) -> int:
            if mask == 0:
                if wilds >= 3:
                    nseq += 1  # D7: the wild cards left form one all-wild sequence
                return 0 if (nseq >= 2 and pure) else _NEG
            key = ((mask * 16 + wilds) * 3 + nseq) * 2 + pure
            hit = memo.get(key)
            if hit is not None and (hit[1] is not None or hit[0] <= alpha):
                return hit[0]
            if (
                (nseq < 2 or not pure)
                # the common case needs no call: a pure run is in and two wild cards remain
                and not (pure and wilds + (mask & flex_mask).bit_count() >= 2)
                and not feasible(mask, wilds, nseq, pure)
            ):
                memo[key] = (_NEG, None)
                return _NEG
            if ceiling <= alpha:
                return ceiling
            b = (mask & -mask).bit_length() - 1
            groups = groups_of[b]
            if groups is None:
                groups = make_groups(b)
            best_v = _NEG
            best_c: tuple[object, ...] | None = None
            nseq2 = nseq + 1 if nseq < 2 else 2
            for negval, need, is_set, used, lower in groups:
                if used & ~mask or lower & mask or need > wilds:
                    continue
                val = -negval
                floor = (alpha if alpha > best_v else best_v) - val
                if is_set:
                    v = best(mask & ~used, wilds - need, nseq, pure, floor, ceiling - val)
                else:
                    v = best(mask & ~used, wilds - need, nseq2, 1 if (need == 0 or pure) else 0, floor, ceiling - val)
                if v > _NEG and v + val > best_v:
                    best_v = v + val
                    if v > floor:
                        best_c = ("set" if is_set else "run", used, need)
                    if best_v == ceiling:
                        break
            floor = alpha if alpha > best_v else best_v
            skipped = _NEG
            copies = (1 << b) | (later[b] & mask)
            k = copies.bit_count()
            if floor >= ceiling - k * value[b]:
                skipped = ceiling - k * value[b]  # the loose/wild branch cannot help
            else:
                rest = mask & ~copies
                if b < nflex:
                    # A wild-rank card not in a pure run becomes a wild card (D5).
                    v = best(rest, wilds + k, nseq, pure, floor, ceiling)
                    kind = "wild"
                else:
                    v = best(rest, wilds, nseq, pure, floor, ceiling - k * value[b])
                    kind = "loose"
                if v > best_v:
                    best_v = v
                    if v > floor:
                        best_c = (kind,)
            if best_v > alpha:
                memo[key] = (best_v, best_c)
                return best_v
            # Only an upper bound: it must cover the branch that was not searched.
            if skipped > best_v:
                best_v = skipped
            if hit is None:
                memo[key] = (best_v, None)
            return best_v

        ceiling = sum(value[b] for b in range(self.n) if self.start_mask >> b & 1)
        return best(self.start_mask, self.start_wilds, 0, 0, _NEG, ceiling)


def _sequence_order(cards: list[Card], members: list[int], wild_ids: list[int]) -> tuple[int, ...]:
    """Display order for a sequence: naturals at their positions, wild cards in the
    gaps, spare wild cards above (or below, when the run cannot grow upwards)."""
    if not members:
        return tuple(wild_ids)
    length = len(members) + len(wild_ids)
    pos: dict[int, int] = {}
    for ace_high in (False, True):
        pos = {14 if (cards[m].rank == 0 and ace_high) else cards[m].rank + 1: m for m in members}
        if max(pos) - min(pos) + 1 <= length:
            break
    lo, hi = min(pos), max(pos)
    spare = list(wild_ids)
    seq: list[int] = []
    for p in range(lo, hi + 1):
        seq.append(pos[p] if p in pos else spare.pop())
    while spare:
        if hi + 1 <= (13 if lo == 1 else 14):
            seq.append(spare.pop())
            hi += 1
        else:
            seq.insert(0, spare.pop())
            lo -= 1
    return tuple(seq)


def best_arrangement(hand: Sequence[Card], wild_rank: int | None) -> Arrangement:
    """The minimum points of ``hand`` under D13, one arrangement that achieves it, and
    whether the cards are a valid declare (D11).  Exact; see the module docstring."""
    cards = list(hand)
    values = [card_value(c, wild_rank) for c in cards]
    total = sum(values)
    # (c) everything counts.
    best_points, best_case = total, Case.NOTHING
    best_groups: list[tuple[int, ...]] = []
    # (b) the most valuable pure run is spared.
    pure_run = _best_pure_run(cards, values)
    valid = False
    if pure_run is not None:
        pts = total - sum(values[i] for i in pure_run)
        if pts < best_points:
            best_points, best_case, best_groups = pts, Case.PURE_ONLY, [pure_run]
        # (a) ≥ 2 sequences, ≥ 1 pure: a search, when a second sequence can exist.
        if _second_sequence_possible(cards, wild_rank):
            search = _Search(cards, wild_rank, values)
            grouped = search.run()
            if grouped > _NEG:
                a_points = total - grouped
                valid = a_points == 0
                if a_points <= best_points:
                    best_points, best_case = a_points, Case.SEQUENCES
                    best_groups = _reconstruct(search, cards)
    used = {i for g in best_groups for i in g}
    loose = tuple(i for i in range(len(cards)) if i not in used)
    return Arrangement(best_points, valid, best_case, tuple(best_groups), loose)


def _best_pure_run(cards: Sequence[Card], values: Sequence[int]) -> tuple[int, ...] | None:
    """The pure run (D6) of highest value among the cards, or None.  Values are never
    negative, so the best run is one of the maximal runs of distinct consecutive
    faces in a suit (positions 1…14, never both aces in one run, D9)."""
    where: list[list[int]] = [[-1] * 16 for _ in range(4)]
    for i, c in enumerate(cards):
        if c.rank >= 0:
            row = where[c.suit]
            if row[c.rank + 1] < 0:
                row[c.rank + 1] = i
                if c.rank == 0:
                    row[14] = i
    best: tuple[int, ...] | None = None
    best_v = -1
    for row in where:
        p = 1
        while p <= 12:
            if row[p] < 0 or row[p + 1] < 0 or row[p + 2] < 0:
                p += 1
                continue
            run = [row[p], row[p + 1], row[p + 2]]
            q = p + 3
            while q <= (13 if p == 1 else 14) and row[q] >= 0:
                run.append(row[q])
                q += 1
            v = sum(values[i] for i in run)
            if v > best_v:
                best, best_v = tuple(run), v
            p = q
    return best


def _second_sequence_possible(cards: Sequence[Card], wild_rank: int | None) -> bool:
    """A quick necessary condition for case (a), to skip hopeless searches: some pure
    run of three and, outside it, the makings of a second sequence.  With two or more
    wild cards anything may do, so it answers True; with at most one, the second
    sequence needs two more naturals of one suit within two positions."""
    if sum(1 for c in cards if c.is_joker or c.rank == wild_rank) >= 2:
        return True
    pos: list[tuple[int, int, int]] = []  # (suit, position, card index)
    for i, c in enumerate(cards):
        if c.rank >= 0:
            pos.append((c.suit, c.rank + 1, i))
            if c.rank == 0:
                pos.append((c.suit, 14, i))
    at = {(s, p): i for s, p, i in pos}
    for s, p, i in pos:
        j, k = at.get((s, p + 1)), at.get((s, p + 2))
        if j is None or k is None or p + 2 > (13 if p == 1 else 14):
            continue
        run = {i, j, k}
        for s2, p2, i2 in pos:
            if i2 in run:
                continue
            for s3, p3, i3 in pos:
                if s3 == s2 and i3 not in run and i3 != i2 and 0 < p3 - p2 <= 2:
                    return True
    return False


def _reconstruct(search: _Search, cards: list[Card]) -> list[tuple[int, ...]]:
    """Follow the memoised choices from the root and lay the groups out."""
    mask = search.start_mask
    wilds, nseq, pure = search.start_wilds, 0, 0
    pool = list(search.jokers) + search.pre_wild
    plan: list[tuple[str, list[int], int]] = []
    while mask:
        choice = search.memo[((mask * 16 + wilds) * 3 + nseq) * 2 + pure][1]
        assert choice is not None, "an exact memo entry holds its choice"
        b = (mask & -mask).bit_length() - 1
        if choice[0] in ("wild", "loose"):
            copies = (1 << b) | (search.later[b] & mask)  # the card and its later copies
            mask &= ~copies
            if choice[0] == "wild":
                pool.extend(search.order[x] for x in range(search.n) if copies >> x & 1)
                wilds += copies.bit_count()
        else:
            kind, used, need = choice
            assert isinstance(used, int) and isinstance(need, int)
            mask &= ~used
            wilds -= need
            if kind == "run":
                nseq = min(nseq + 1, 2)
                pure = 1 if (need == 0 or pure) else 0
            plan.append((str(kind), [search.order[x] for x in range(search.n) if used >> x & 1], need))
    runs: list[tuple[list[int], list[int]]] = []
    sets: list[list[int]] = []
    for kind, members, need in plan:
        taken = [pool.pop() for _ in range(need)]
        if kind == "run":
            runs.append((members, taken))
        else:
            sets.append(members + taken)
    all_wild: list[int] = []
    if len(pool) >= 3:
        all_wild, pool = pool, []  # D7: three or more wild cards alone
    # A loose wild card costs nothing; put it into a sequence that may become impure
    # (an impure run, or a second pure run), else a set with room.  There is always
    # such a place (docs/scoring.md), so a valid declare shows every card grouped.
    for w in pool:
        impure = [r for r in runs if r[1]]
        pure_runs = [r for r in runs if not r[1]]
        small_sets = [g for g in sets if len(g) < 4]
        if all_wild:
            all_wild.append(w)
        elif impure:
            impure[0][1].append(w)
        elif len(pure_runs) >= 2:
            pure_runs[-1][1].append(w)
        elif small_sets:
            small_sets[0].append(w)
    groups = [_sequence_order(cards, m, w) for m, w in runs]
    groups += [tuple(g) for g in sets]
    if all_wild:
        groups.append(tuple(all_wild))
    return groups

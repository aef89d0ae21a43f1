"""Best arrangement of a hand (RULES.md D11, D13): exact minimum points.

The approach (docs/scoring.md gives the argument that it is exact)
------------------------------------------------------------------
Points are the minimum over three counting cases (D13):

(a) at least two sequences, one of them pure: only ungrouped cards count;
(b) a pure sequence but no valid (a): every card counts but the one most valuable
    pure run;
(c) every card counts.

(b) and (c) are closed formulas.  (a) is a search: maximise the value of the grouped
cards over every way of splitting the hand into non-overlapping valid groups plus
loose cards, subject to "≥ 2 sequences, ≥ 1 pure".

The search first chooses the pure sequence: every pure run of three to five cards
(a longer one is a pure run of three plus a run of the rest, the same cards grouped
with one sequence more).  That is the only place a card of the wild rank (a "flex"
card) may stand as itself; everywhere else standing as itself is the same as
standing in for its own face (D5, D6), so after the choice the printed jokers and
the other flex cards are just a number of interchangeable wild cards.

Then a memoised recursion decides the fate of the *first remaining* natural (suit by
suit, rank by rank): it stays loose, or heads a set of its rank (with naturals of
later suits, wild cards for missing suits), or a run of its suit: itself and every
free natural of the suit after it up to where the run ends, wild cards in the gaps
and for shortness below three cards.  A run never skips a present natural (a wild
card in its place): were that natural loose, it would be better in the run; were it
in another group, it and the wild card could trade places — the same value, the
same wild cards, no fewer sequences, and purity no longer matters.  A run of one
natural and two wilds dominates the set of one natural and two wilds, so the latter
is not tried.  When no natural is left, three or more wild cards left over form one
all-wild impure sequence (D7), or stay loose.

Copies of one face (two or three decks) are interchangeable, so a group always takes
the first free copy of each face and a card left loose takes its later copies with
it; every arrangement has a relabelling of that form.

Branch and bound (fail-soft) with a memo keyed on (remaining naturals, free wild
cards, sequences so far capped at 2); the bound is the value of the naturals left
less what surely stays loose (:meth:`_Search._lost`).  Wild cards never cost points,
so a group never takes more than it needs; a loose wild card at the end is put into a
sequence for display (there is always room: see docs/scoring.md), and a hand is a
valid declare exactly when (a) is feasible with zero points.
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
_HALF_NEG = _NEG // 2

# -value, wilds needed, kind, used mask
_Entry = tuple[int, int, int, int]
_RUN, _SET = 0, 1  # kinds of group


class _Search:
    """One best-arrangement search over one hand (the (a) case).

    Bit ``b`` of a mask stands for card ``order[b]``: the naturals (neither printed
    jokers nor of the wild rank) first, suit by suit (suits with fewer naturals
    first) and by rank, then the flex cards.  Below the choice of the pure sequence
    the masks hold naturals only and ``w`` counts the free wild cards.
    """

    def __init__(self, hand: Sequence[Card], wild_rank: int | None, values: Sequence[int]) -> None:
        # A printed joker has rank -1, never a wild rank (0…12 or None).
        nat = [i for i, c in enumerate(hand) if c.rank >= 0 and c.rank != wild_rank]
        flex = [i for i, c in enumerate(hand) if c.rank >= 0 and c.rank == wild_rank]
        self.jokers = [i for i, c in enumerate(hand) if c.rank < 0]
        # Suits with fewer naturals first: their cards have the fewest groups, and
        # the bounds learn early what they cost (bench/score_worst.py finds the
        # worst hands of this order less bad than those of the opposite one).
        count = [0] * 4
        for i in nat:
            count[hand[i].suit] += 1
        suit_order = sorted(range(4), key=lambda s: (count[s], s))
        place = [0] * 4
        for k, s in enumerate(suit_order):
            place[s] = k
        nat.sort(key=lambda i: (place[hand[i].suit], hand[i].rank))
        self.order = nat + flex
        self.n = n = len(self.order)
        self.nnat = nnat = len(nat)
        self.value = value = [values[i] for i in self.order]
        suit = [hand[i].suit for i in self.order]
        rank = [hand[i].rank for i in self.order]
        self.suit, self.rank = suit, rank
        # nat_at / flex_at [suit][position 1..14]: the masks of the natural / flex
        # copies of that face (an ace sits at 1 and at 14); face_value: what one
        # natural copy there is worth.
        nat_at = [[0] * 16 for _ in range(4)]
        flex_at = [[0] * 16 for _ in range(4)]
        face_value = [[0] * 16 for _ in range(4)]
        self.places = [0] * 4  # per suit, bit p: a card at place p
        for b in range(n):
            for p in (1, 14) if rank[b] == 0 else (rank[b] + 1,):
                self.places[suit[b]] |= 1 << p
                if b < nnat:
                    nat_at[suit[b]][p] |= 1 << b
                    face_value[suit[b]][p] = value[b]
                else:
                    flex_at[suit[b]][p] |= 1 << b
        self.nat_at, self.flex_at, self.face_value = nat_at, flex_at, face_value
        # Copies of one face (two or three decks) are interchangeable: a group takes
        # the first free copy of each face, and a natural left loose takes its later
        # copies with it.  later[b]: b's copies after it.
        self.later = [nat_at[suit[b]][rank[b] + 1] & ~((2 << b) - 1) for b in range(nnat)]
        # set_mates[b]: b's rank in the suits after b's (a set headed by b takes from
        # them); rank_mates[b]: b's rank in every other suit (b could be in a set).
        self.later_suits = [suit_order[place[s] + 1 :] for s in range(4)]
        of_rank = [nat_at[0][p] | nat_at[1][p] | nat_at[2][p] | nat_at[3][p] for p in range(14)]
        self.rank_mates = [of_rank[rank[b] + 1] & ~nat_at[suit[b]][rank[b] + 1] for b in range(nnat)]
        self.set_mates = [0] * nnat
        for b in range(nnat):
            if self.rank_mates[b]:
                for s2 in self.later_suits[suit[b]]:
                    self.set_mates[b] |= nat_at[s2][rank[b] + 1]
        self.wilds = wilds = len(self.jokers) + len(flex)
        self.memo: dict[int, tuple[int, tuple[object, ...] | None]] = {}
        self.work = 0  # calls plus groups tried: a deterministic cost figure
        self.pure_run = 0  # the mask of the pure sequence chosen, for _reconstruct
        # For the bounds, per natural b: near[b], the naturals of b's suit at most two
        # places away (other faces).  (run_trios, partner, trios and dups are made
        # by _tables when a bound first needs them.)
        self.near: list[int] = []
        start = 0
        for b in range(nnat):
            row = nat_at[suit[b]]
            p = rank[b] + 1
            near = (row[p - 2] if p > 2 else 0) | row[p - 1] | row[p + 1] | row[p + 2]
            if p == 1:  # an ace is at 14 too
                near |= row[12] | row[13]
            self.near.append(near)
            # Naturals no group can hold stay loose, settled before the search: a
            # group holding b needs two wild cards, or another natural of b's rank,
            # or another natural of b's suit within two places (one wild card at most).
            if wilds >= 2 or near or self.rank_mates[b]:
                start |= 1 << b
        self.start_mask = start
        self.run_trios: list[list[tuple[int, int]]] = []
        self.partner: list[list[int]] = []
        self.trios: list[list[tuple[int, int]]] = []
        self.dups: list[tuple[int, int, int, int]] = []

    def _tables(self) -> None:
        """partner[b][w]: every natural that can share a group with natural b when
        w ≥ 1 wild cards are about (b's rank in another suit, or b's suit at most
        w + 1 places away); trios[b]: pairs of face masks that make a group of three
        naturals with b (a pure run or a set); dups: the faces with two or more
        copies, (copies, near, rank mates, value)."""
        nat_at, suit, rank, wilds = self.nat_at, self.suit, self.rank, self.wilds
        for b in range(self.nnat):
            row = nat_at[suit[b]]
            own = (1, 14) if rank[b] == 0 else (rank[b] + 1,)
            self.run_trios.append(
                [
                    (row[lo], row[hi])
                    for p in own
                    for lo, hi in ((p - 2, p - 1), (p - 1, p + 1), (p + 1, p + 2))
                    if 1 <= lo and hi <= 14 and row[lo] and row[hi]
                ]
            )
            near = self.rank_mates[b] | self.near[b]
            partner = [0, near]
            for d in range(3, wilds + 2):
                for p in own:
                    for q in (p - d, p + d):
                        if 1 <= q <= 14 and q not in own:
                            near |= row[q]
                partner.append(near)
            self.partner.append(partner)
            mates = [nat_at[s2][rank[b] + 1] for s2 in range(4) if s2 != suit[b] and nat_at[s2][rank[b] + 1]]
            self.trios.append(self.run_trios[b] + [(m1, m2) for i, m1 in enumerate(mates) for m2 in mates[i + 1 :]])
            if self.later[b] and not nat_at[suit[b]][rank[b] + 1] & ((1 << b) - 1):
                self.dups.append((self.later[b] | 1 << b, self.near[b], self.rank_mates[b], self.value[b]))

    # -- candidate groups (D6–D10) ---------------------------------------------------
    # Made for each state from the cards still free, so every one fits: a group takes
    # the first free copy of each face (``m & -m`` of the face's copies in the mask).
    # An entry is (-value, wilds needed, kind, used mask): plain sorting puts the
    # most valuable first, sequences before sets.
    def pure_runs(self) -> list[_Entry]:
        """The pure runs (D6, D9) that can be the pure sequence: three to five
        consecutive faces of one suit, each a natural (its first copy) or, in its
        own place, a flex card."""
        out: list[_Entry] = []
        for s in range(4):
            here = self.places[s]
            if not here & here >> 1 & here >> 2:
                continue  # no three places in a row
            row, frow, fv = self.nat_at[s], self.flex_at[s], self.face_value[s]
            cells: list[tuple[int, int]] = []
            for p in range(1, 16):
                m = row[p] & self.start_mask if p < 15 else 0
                f = frow[p] if p < 15 else 0
                if m or f:
                    cells.append((m & -m, fv[p]) if m else (f & -f, 0))
                    continue
                # a stretch of present faces ends before p: its windows of 3 to 5
                for i in range(len(cells) - 2):
                    used, val = 0, 0
                    for j in range(i, min(i + 5, len(cells))):
                        used |= cells[j][0]
                        val += cells[j][1]
                        if j - i >= 2:
                            out.append((-val, 0, _RUN, used))
                cells = []
        out.sort()
        return out

    def _groups(self, b: int, mask: int, w: int) -> list[_Entry]:
        """The groups the first free natural b can head with ``w`` wild cards
        (D7–D10), but those that cannot do better than another (see _runs_from)."""
        out: list[_Entry] = []
        r = self.rank[b]
        if self.set_mates[b] & mask:
            self._sets_from(b, r, mask, w, out)
        self._runs_from(b, 1 if r == 0 else r + 1, 1, mask, w, out)
        if r == 0:
            self._runs_from(b, 14, -1, mask, w, out)  # the ace played high
        out.sort()
        return out

    def _sets_from(self, b: int, r: int, mask: int, w: int, out: list[_Entry]) -> None:
        """Sets (D8, D10) headed by b: the first free copy of its rank from some later suits."""
        partial = [(1 << b, self.value[b], 1)]
        for s2 in self.later_suits[self.suit[b]]:
            m = self.nat_at[s2][r + 1] & mask
            if m:
                x = m & -m
                v = self.face_value[s2][r + 1]
                partial += [(u | x, val + v, k + 1) for u, val, k in partial]
        for used, val, k in partial:
            # one natural and two wilds is dominated by a run (D26)
            if k >= 3:
                out.append((-val, 0, _SET, used))
            elif k == 2 and w:
                out.append((-val, 1, _SET, used))

    def _runs_from(self, b: int, p0: int, step: int, mask: int, w: int, out: list[_Entry]) -> None:
        """Runs (D7, D9) whose lowest natural is b, at place p0, going up (down from
        an ace played high): b and every free natural of its suit after it (the
        first copy of each face) up to where the run ends, wild cards in the gaps
        and for the shortness below three cards.  A run never skips a free natural
        (see the module docstring), so it is known by where it ends."""
        row, fv = self.nat_at[self.suit[b]], self.face_value[self.suit[b]]
        lo_edge = 2 if p0 == 14 else 1  # never both aces in one run (D9)
        hi_edge = 13 if p0 == 1 else 14
        used, val, n, gaps = 1 << b, self.value[b], 1, 0
        if w >= 2 and step > 0:  # b and two wild cards (an ace alone going down is the same)
            out.append((-val, 2, _RUN, used))
        q = p0 + step
        while lo_edge <= q <= hi_edge:
            m = row[q] & mask
            if m:
                used |= m & -m
                val += fv[q]
                n += 1
                need = gaps if n + gaps >= 3 else 3 - n
                if need <= w:
                    out.append((-val, need, _RUN, used))
            else:
                gaps += 1
                if gaps > w:
                    break
            q += step

    # -- bounds ----------------------------------------------------------------------
    def _has_sequence(self, mask: int, w: int) -> bool:
        """Could the naturals in ``mask`` and ``w`` wild cards hold a sequence?"""
        if w >= 3 or (w == 2 and mask):
            return True
        if not w and not self.partner:
            self._tables()
        m = mask
        while m:
            x = m & -m
            m ^= x
            b = x.bit_length() - 1
            if w:
                if self.near[b] & mask:
                    return True
            else:
                for f1, f2 in self.run_trios[b]:
                    if f1 & mask and f2 & mask:
                        return True
        return False

    def _lost(self, mask: int, w: int) -> int:
        """A lower bound on the value of the naturals in ``mask`` that stay loose
        whatever happens, with ``w`` wild cards; the larger of two:

        * a natural with no partner in the mask (``partner``) needs two wild cards
          to itself, so at most w // 2 such naturals are grouped; with no wild
          card, a natural needs a pure run or a set of three (``trios``);
        * the copies of one face are in different groups, each a set (which needs
          another natural of the rank) or a run through the face's place, which
          holds two more cards at most two places away: naturals of the suit
          there, or wild cards."""
        if not self.partner:
            self._tables()
        value = self.value
        lost = 0
        m = mask
        if w:
            iso: list[int] = []
            partner = self.partner
            while m:
                x = m & -m
                m ^= x
                b = x.bit_length() - 1
                if not partner[b][w] & mask:
                    iso.append(value[b])
            keep = w // 2
            if len(iso) > keep:
                iso.sort()
                lost = sum(iso[: len(iso) - keep])
        else:
            trios = self.trios
            while m:
                x = m & -m
                m ^= x
                b = x.bit_length() - 1
                for f1, f2 in trios[b]:
                    if f1 & mask and f2 & mask:
                        break
                else:
                    lost += value[b]
        extra = 0
        for copies, near, mates, v in self.dups:
            c = (mask & copies).bit_count()
            if c >= 2:
                room = ((mask & near).bit_count() + w) // 2 + (mask & mates).bit_count()
                if c > room:
                    extra += (c - room) * v
        return extra if extra > lost else lost

    # -- the recursion -------------------------------------------------------------
    def run(self) -> int:
        """Most value case (a) can group, or _NEG if (a) cannot be met.

        The root tries every pure run as the pure sequence; below it a recursion
        decides the first natural left.  It is branch and bound, fail-soft: a
        result above ``alpha`` is exact; a result at or below it is only an upper
        bound (the caller already has something at least as good).  Exact results
        are memoised with the choice that made them, for :func:`_reconstruct`.
        ``ceiling`` is the value of every natural left: nothing can beat it.
        ``nseq``, the sequences so far, is capped at 2.
        """
        memo = self.memo
        value = self.value
        has_sequence = self._has_sequence
        later = self.later
        make_groups = self._groups
        lost = self._lost

        def best(mask: int, w: int, nseq: int, alpha: int, ceiling: int) -> int:
            self.work += 1
            if not mask:
                return 0 if (nseq >= 2 or w >= 3) else _NEG  # D7: three wild cards alone
            key = (mask * 32 + w) * 3 + nseq
            hit = memo.get(key)
            if hit is not None and (hit[1] is not None or hit[0] <= alpha):
                return hit[0]
            if nseq < 2 and w < 2 and not has_sequence(mask, w):
                memo[key] = (_NEG, None)
                return _NEG
            if ceiling <= alpha:
                return ceiling
            ub = ceiling
            if alpha > _HALF_NEG:  # with nothing to beat yet, the bound cannot cut
                ub -= lost(mask, w)
                if ub <= alpha:
                    if hit is None:
                        memo[key] = (ub, None)
                    return ub
            b = (mask & -mask).bit_length() - 1
            groups = make_groups(b, mask, w)
            self.work += len(groups)
            best_v = _NEG
            best_c: tuple[object, ...] | None = None
            nseq2 = nseq + 1 if nseq < 2 else 2
            for negval, need, kind, used in groups:
                val = -negval
                floor = (alpha if alpha > best_v else best_v) - val
                v = best(mask & ~used, w - need, nseq2 if kind == _RUN else nseq, floor, ceiling - val)
                if v > _NEG and v + val > best_v:
                    best_v = v + val
                    if v > floor:
                        best_c = ("run" if kind == _RUN else "set", used, need)
                    if best_v == ub:
                        break
            floor = alpha if alpha > best_v else best_v
            skipped = _NEG
            copies = (1 << b) | (later[b] & mask)
            rest = ceiling - copies.bit_count() * value[b]
            bound = rest if rest < ub else ub
            if floor >= bound:
                skipped = bound  # leaving b loose cannot help
            else:
                v = best(mask & ~copies, w, nseq, floor, rest)
                if v > best_v:
                    best_v = v
                    if v > floor:
                        best_c = ("loose",)
            if best_v > alpha:
                memo[key] = (best_v, best_c)
                return best_v
            # Only an upper bound: it must cover the branch that was not searched.
            if skipped > best_v:
                best_v = skipped
            if hit is None:
                memo[key] = (best_v, None)
            return best_v

        naturals = self.start_mask
        ceiling = sum(value[b] for b in range(self.nnat) if naturals >> b & 1)
        top = _NEG
        for negval, _, _, used in self.pure_runs():
            val = -negval
            self.work += 1
            v = best(naturals & ~used, self.wilds - (used >> self.nnat).bit_count(), 1, top - val, ceiling - val)
            if v > _NEG and v + val > top:
                top, self.pure_run = v + val, used
                if top == ceiling:
                    break
        return top


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        x = mask & -mask
        out.append(x.bit_length() - 1)
        mask ^= x
    return out


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
    return _arrange(hand, wild_rank)[0]


def search_work(hand: Sequence[Card], wild_rank: int | None) -> int:
    """How much searching :func:`best_arrangement` does for ``hand``: states expanded
    plus groups tried (0 when case (a) needs no search).  Deterministic, unlike a
    time, so ``bench/score_worst.py`` hunts for slow hands with it and the tests can
    bound it."""
    return _arrange(hand, wild_rank)[1]


def _arrange(hand: Sequence[Card], wild_rank: int | None) -> tuple[Arrangement, int]:
    cards = list(hand)
    work = 0
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
            work = search.work
            if grouped > _NEG:
                a_points = total - grouped
                valid = a_points == 0
                if a_points <= best_points:
                    best_points, best_case = a_points, Case.SEQUENCES
                    best_groups = _reconstruct(search, cards)
    used = {i for g in best_groups for i in g}
    loose = tuple(i for i in range(len(cards)) if i not in used)
    return Arrangement(best_points, valid, best_case, tuple(best_groups), loose), work


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
    """Follow the memoised choices from the pure sequence on and lay the groups out."""
    order = search.order
    p_run = search.pure_run
    plan: list[tuple[str, list[int], int]] = [("run", [order[x] for x in _bits(p_run)], 0)]
    mask = search.start_mask & ~p_run
    w, nseq = search.wilds - (p_run >> search.nnat).bit_count(), 1
    while mask:
        choice = search.memo[(mask * 32 + w) * 3 + nseq][1]
        assert choice is not None, "an exact memo entry holds its choice"
        b = (mask & -mask).bit_length() - 1
        if choice[0] == "loose":
            mask &= ~((1 << b) | search.later[b])  # the card and its later copies
        else:
            kind, used, need = choice
            assert isinstance(used, int) and isinstance(need, int)
            mask &= ~used
            w -= need
            if kind == "run":
                nseq = min(nseq + 1, 2)
            plan.append((str(kind), [order[x] for x in _bits(used)], need))
    # The wild cards: the printed jokers and every flex card not standing as itself.
    pool = list(search.jokers) + [order[x] for x in range(search.nnat, search.n) if not p_run >> x & 1]
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

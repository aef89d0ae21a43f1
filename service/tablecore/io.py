"""What goes into the table core and what comes out of it.

Inputs: :class:`Command` (a client's or the operator's), :class:`Tick` (time
passed), :class:`Outcome` (what the store answered to an op the core asked for),
:class:`LeaseEvent`, :class:`Reach` (a player's connection came or went).
Effects: :class:`Write` and :class:`Load` (ask the store; its answer comes back as an
Outcome; a Write's op may be the one read, :class:`LogOp`), the ``Tell*`` effects,
:class:`Reply`, :class:`Arm`, :class:`LetGo`.

Store ops are plain data the store module (:mod:`service.tablestore`, or the
simulator's store) carries out whole or not at all (in the group commit: each op in
its batch's transaction, under a savepoint of its own); every one is safe to repeat
after an unknown outcome (service.tablestore).  Times are integer milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from verifier.errors import RuleError
from verifier.hand import Event, HandState

if TYPE_CHECKING:
    from service.handrun import HandRun
    from service.handstore import StoredHand
    from service.tablecore.state import TableFacts


# ----------------------------------------------------------------------------- inputs
@dataclass(frozen=True, slots=True)
class Command:
    cmd_id: int
    kind: str  # sit, leave, commit, reveal, action, snapshot, void, close, stand
    player_id: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed (the shell's timer, armed by :class:`Arm`, or its steady beat)."""


class Result(StrEnum):
    COMMITTED = "committed"  # stored; ``data`` is the op's answer
    REFUSED = "refused"  # not stored, by rule: ``error`` says why (a seat taken, no balance…)
    FENCED = "fenced"  # not stored: another node holds the table's lease now
    CONFLICT = "conflict"  # not stored: the store holds something else than memory believes
    FAILED = "failed"  # not stored: the store could not be reached
    FULL = "full"  # not stored: the store refused the write (its disk full, SQLSTATE 53100; out of memory)
    AMBIGUOUS = "ambiguous"  # unknown: the COMMIT's answer was lost


@dataclass(frozen=True, slots=True)
class Outcome:
    op_id: int
    result: Result
    data: Any = None
    error: RuleError | None = None


class Lease(StrEnum):
    LOST = "lost"  # the heartbeat found the lease gone: another node may hold the table
    HANDOFF = "handoff"  # hand the table over as soon as no hand is in progress


@dataclass(frozen=True, slots=True)
class LeaseEvent:
    kind: Lease


@dataclass(frozen=True, slots=True)
class Reach:
    """A player's live connection to this table came (``connected``) or went."""

    player_id: str
    connected: bool


Input = Command | Tick | Outcome | LeaseEvent | Reach


# ----------------------------------------------------------------------------- store ops
@dataclass(frozen=True, slots=True)
class SitOp:
    player_id: str
    seat: int
    need: int  # D20: the hold a seat must be able to cover


@dataclass(frozen=True, slots=True)
class UnseatOp:
    """Stand a player up (a leave, the operator's stand), with the leave's records
    when the leave is a move of the hand in play (D15), in one transaction."""

    player_id: str
    hand_id: int | None = None
    hand_no: int = 0
    records: tuple[dict[str, Any], ...] = ()
    deadline: int | None = None


@dataclass(frozen=True, slots=True)
class StandLaterOp:
    seat: int  # stood up as the hand in progress ends


@dataclass(frozen=True, slots=True)
class StandAwayOp:
    """Stand up these absent seats: away too long at a table too few are connected
    to deal at (D34)."""

    players: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ProbeOp:
    """A write of nothing, to learn that the store answers (and that this node still
    holds the table) before the clock charges a seat with no connection (D37): a store
    that hangs unseen holds that player's way back too (its handshake reads the
    store), and a hang this write finds is the house's fault, with every grace after
    it."""


@dataclass(frozen=True, slots=True)
class StatusOp:
    status: str  # closing


@dataclass(frozen=True, slots=True)
class CloseOp:
    """Every seat stood up, the table closed."""


@dataclass(frozen=True, slots=True)
class NotDealt:
    """A StartOp's answer when fewer than min_players of the connected seats can be
    dealt in (D20's hold, a strict key of their own): no hand.  ``unable``: the
    connected seats that cannot be; ``stood``: those of them the op was to stand up
    (``StartOp.stand_unable``: unable for ``away_ms``, D34), stood up, so that they hold
    no table up for ever.  The table tries again later."""

    unable: tuple[str, ...]
    stood: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Started:
    """What the store held for a new hand: its id, the seats that could cover their
    hold (D20) with their keys, the server seed it drew and sealed, and the players
    stood up after max_away hands away (D34)."""

    hand_id: int
    seed: bytes
    players: dict[int, str]
    keys: dict[str, bytes]


@dataclass(frozen=True, slots=True)
class StartOp:
    """A new hand: the hand row with its sealed server seed, a hold per candidate
    that can cover it (the others sit out), the header made by ``begin`` (pure: the
    core's) stored as record 0, the table's next hand number and dealer, and D34's
    count of hands away (a connected seat not dealt in counts as away too) — one
    transaction.  Answer: (HandRun, dealer, stood-up players); :class:`NotDealt` when
    fewer than min_players can be dealt in (nothing written but the stand-ups of
    ``stand_unable``)."""

    hand_no: int
    candidates: tuple[tuple[int, str], ...]
    absent: tuple[str, ...]
    need: int
    min_players: int
    max_away: int
    begin: Callable[[Started], tuple[HandRun, int]]  # -> (hand, dealer)
    #: a moment of the table's time on the clock (``TableCore.shown``): the hand's stored
    #: deadline is on the clock (the two differ while the table's time is ahead, D37)
    shown: Callable[[int | None], int | None] = lambda at: at
    #: D34: candidates that could not be dealt in for ``away_ms``: stood up if they still
    #: cannot be and no hand is dealt
    stand_unable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RecordsOp:
    """Records of one hand and its clock (the group commit's write)."""

    hand_no: int
    hand_id: int
    records: tuple[dict[str, Any], ...]
    deadline: int | None
    status: str | None = None  # "playing" once the deal is stored


@dataclass(frozen=True, slots=True)
class SeedOp:
    kind: str  # commit or reveal
    hand_id: int
    seat: int
    value: bytes
    psig: str
    arrived: int = 0  # the ack's: the table's time when it judged the move (ms; the store keeps the latest)


@dataclass(frozen=True, slots=True)
class FinishOp:
    """Settle once (D19) or release every hold (a void, D33), publish the transcript,
    move the table's head, stand up ``stand_up`` (D31) and the seats the operator
    asked to stand up.  Answer: the players stood up (None: it had ended already)."""

    hand_id: int
    transcript: bytes  # its canonical JSON (HandRecorder.transcript_text)
    head: str  # the table's head once the hand has ended: the transcript's
    holds: dict[int, tuple[str, int]]
    settlement: Any  # verifier.settle.Settlement | None
    void_reason: str | None
    stand_up: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LogOp:
    """A read, not a write: the stored records numbered ``start`` to ``stop - 1`` of a
    hand in progress (the ones memory forgot, verifier.recordlog), opened.  Answer:
    the records' canonical JSON, in order.  The recorder checks their chain before it
    holds or publishes them."""

    hand_id: int
    hand_no: int
    start: int
    stop: int


@dataclass(frozen=True, slots=True)
class VoidUnreadableOp:
    stored: StoredHand
    reason: str


@dataclass(frozen=True, slots=True)
class QuarantineOp:
    hand_id: int
    keep: int  # records from this number on are set aside (D33)
    reason: str  # why the hand is voided (stored with it: a reload before the void voids it)


Op = (
    (SitOp | UnseatOp | StandLaterOp | StatusOp | CloseOp | StartOp | RecordsOp | SeedOp | FinishOp | VoidUnreadableOp)
    | StandAwayOp
    | QuarantineOp
    | LogOp
    | ProbeOp
)


@dataclass(frozen=True, slots=True)
class Loaded:
    """What a load answers: the table's row and seats, its unfinished hand, and the
    transcript of the hand memory last had if that one has ended meanwhile; and the time
    (``t``, ms) of the newest record of the table's latest hand, ended or not (0: none),
    before which the table's time never goes (D37)."""

    facts: TableFacts
    stored: StoredHand | None
    ended: HandEnd | None = None
    last_t: int = 0


@dataclass(frozen=True, slots=True)
class HandEnd:
    """What the result push tells of an ended hand's transcript (§12; the whole of it
    is published at /api/hands/{id}/transcript)."""

    head: str
    server_seed: str
    result: dict[str, Any] | None  # None: a void (D33)
    void: bool
    void_reason: str | None

    @classmethod
    def of(cls, transcript: Mapping[str, Any]) -> HandEnd:
        last = transcript["log"][-1]
        void = last["type"] == "void"
        reason = str(last["reason"]) if void else None
        return cls(str(transcript["head"]), str(transcript["server_seed"]), transcript["result"], void, reason)


# ----------------------------------------------------------------------------- effects
@dataclass(frozen=True, slots=True)
class Write:
    op_id: int
    op: Op


@dataclass(frozen=True, slots=True)
class Load:
    op_id: int
    ended_of: int | None  # a hand id: answer its transcript if it has ended


@dataclass(frozen=True, slots=True)
class TellAll:
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TellSeats:
    seats: dict[int, str]
    status: str  # the table's: open, closing (no new hand) or closed
    stood: list[dict[str, Any]] = field(default_factory=list)  # the seats this change stood up, and why


@dataclass(frozen=True, slots=True)
class TellPhase:
    hand: HandRun
    deadline: int | None


@dataclass(frozen=True, slots=True)
class TellUpdate:
    """A stored record from the deal on: its events and what changed in each seat's
    view from ``before`` to ``after`` (the whole view when ``before`` is None: the
    deal).  ``cmd_id``: the command whose reply carries the mover's update (one frame
    for the mover, service.telling)."""

    hand: HandRun
    record: dict[str, Any]
    events: list[Event]
    deadline: int | None
    before: HandState | None = None
    after: HandState | None = None
    cmd_id: int | None = None


@dataclass(frozen=True, slots=True)
class TellResult:
    hand: HandRun
    end: HandEnd


@dataclass(frozen=True, slots=True)
class TellResumed:
    """Each connected player gets ``resumed`` with its snapshot."""


@dataclass(frozen=True, slots=True)
class Signed:
    """A signature a reply carries (an ack, a head), made by the shell as it sends
    the reply: signed once, and never for a reply nobody reads (the simulator)."""

    make: Callable[[], dict[str, Any]]


def resolve(result: dict[str, Any] | None) -> dict[str, Any]:
    """A reply as it is sent: its :class:`Signed` parts signed."""
    if not result:
        return {}
    return {k: v.make() if isinstance(v, Signed) else v for k, v in result.items()}


@dataclass(frozen=True, slots=True)
class Reply:
    cmd_id: int
    result: dict[str, Any] | None = None
    error: RuleError | None = None


@dataclass(frozen=True, slots=True)
class Arm:
    at: int | None  # ms; None: nothing is due


@dataclass(frozen=True, slots=True)
class LetGo:
    """This node no longer serves the table: tell every client ``moved`` and close its
    socket (they reconnect and are sent to the owner), release the lease if
    ``release`` (a hand-over, or ``failed``: the table's task raised), and stop."""

    release: bool
    why: str
    failed: bool = False


@dataclass(frozen=True, slots=True)
class Charge:
    """The clock charged a seat (a timeout, a null commitment, a withheld reveal): for
    the simulator's checks and the metrics.  ``began``: when the window or turn it
    closed began (ms)."""

    hand_id: int
    seat: int
    kind: str
    at: int
    began: int | None = None


Effect = (
    Write | Load | TellAll | TellSeats | TellPhase | TellUpdate | TellResult | TellResumed | Reply | Arm | LetGo
) | Charge


@dataclass
class Pending:
    """The one op in flight: what to release when it commits (stored before told),
    the command it answers, and how to tell after an unknown outcome whether it was
    stored (judged on the reloaded state)."""

    op_id: int
    op: Op
    since: int
    steady: int  # the core's steady time then (``TableCore.steady``: D37 times a hung write on it)
    after: list[Effect] = field(default_factory=list)
    cmd: Command | None = None
    settled: Callable[[], dict[str, Any] | None] | None = None
    on_commit: Callable[[Any], dict[str, Any] | None] | None = None  # may give the reply
    on_refused: Callable[[RuleError | None], None] | None = None
    judged: Any = None  # the command's move as the table judged it (service.tablecore.commands.Judged)

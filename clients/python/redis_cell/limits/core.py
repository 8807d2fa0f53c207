"""What the sync and asyncio halves of the ``limits`` hooks share: where each algorithm keeps
its keys, the module's commands as words, what their replies say in limits' terms, and the
in-process GCRA for limits' memory storages. Nothing here does I/O."""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

from limits.errors import StorageError

from .. import routing
from ..errors import explained

NANOS = 1_000_000_000
MILLIS = 1_000_000

# The moving window's oldest live unit, which no single reply carries: a peek counts the live
# units, and a dry run of one more than remain says when the oldest leaves. On the module, one
# script, so that both see the same log; each call is O(log n) in the live entries. ARGV[3...]
# are more options for both calls (BUCKETS n: the oldest cell, then). A script cannot FCALL,
# so on the library the two calls are sent one after the other (``moving_window_peek``,
# ``moving_window_oldest``): a hit between them skews those stats, never a decision.
MOVING_WINDOW_SCRIPT = """
local peek = redis.call('CL.WINDOW', KEYS[1], ARGV[1], ARGV[2], 0, 'MS', unpack(ARGV, 3))
local taken = tonumber(ARGV[1]) - peek[3]
if taken <= 0 then return {0, 0} end
local next = redis.call('CL.WINDOW', KEYS[1], ARGV[1], ARGV[2], peek[3] + 1, 'MS', 'DRYRUN',
                        unpack(ARGV, 3))
return {taken, next[4]}
"""


def moving_window_peek(key: str, limit: int, period_ms: int, options: Sequence) -> List[object]:
    """The script's first call."""
    return ["CL.WINDOW", key, limit, period_ms, 0, "MS", *options]


def moving_window_oldest(key: str, limit: int, period_ms: int, options: Sequence,
                         peek: Sequence) -> Optional[List[object]]:
    """The script's second call, after the peek's reply; None where nothing is taken."""
    if limit - int(peek[2]) <= 0:
        return None
    return ["CL.WINDOW", key, limit, period_ms, int(peek[2]) + 1, "MS", "DRYRUN", *options]


def moving_window_count(limit: int, peek: Sequence, oldest: Optional[Sequence]) -> List[int]:
    """The script's reply, from its two calls' (a unit that left between them: now)."""
    if oldest is None:
        return [0, 0]
    return [limit - int(peek[2]), max(int(oldest[3]), 0)]


def caught(base) -> tuple:
    """What a storage catches of a limiter's call: limits' ``base_exceptions`` for its client
    (a class or a collection of them), and redis-py's, which the router raises where it names
    a failure (ModuleMissingError, LibraryTooOldError) whatever the client."""
    own = tuple(base) if isinstance(base, (list, tuple, set)) else (base,)
    return own + routing.ERRORS


def failure(error: Exception, wrap: bool) -> Exception:
    """What a storage raises for a limiter's error: limits' ``StorageError`` when the storage
    wraps errors, the error itself otherwise; a server with neither the module nor its library
    either way as :class:`~redis_cell.errors.ModuleMissingError`, which says how to load
    them."""
    reason = explained(error)
    return StorageError(reason) if wrap else reason


# The most cells a bucketed window gets unless the storage says otherwise: 60 divides every
# period of whole minutes, so a minute gets cells of a second and a day cells of 24 minutes.
MOST_BUCKETS = 60


def gcra_key(prefix: str, key: str) -> str:
    """A GCRA limiter's key: a TAT, which a fixed window's count would be misread as."""
    return f"{prefix}:gcra:{key}"


def window_key(prefix: str, key: str) -> str:
    """A moving window's key: the module's log, where limits keeps a list at the bare key."""
    return f"{prefix}:window:{key}"


def buckets_key(prefix: str, key: str) -> str:
    """A bucketed window's key: the module refuses an exact window's log there, and the
    reverse."""
    return f"{prefix}:buckets:{key}"


def fixed_key(prefix: str, key: str) -> str:
    """A fixed window's key: limits' own, whose INCR counters CL.FIXED reads as they are."""
    return f"{prefix}:{key}"


def every_key(prefix: str, key: str) -> List[str]:
    """Every algorithm's key for one limit, which ``clear`` removes."""
    return [fixed_key(prefix, key), window_key(prefix, key), buckets_key(prefix, key),
            gcra_key(prefix, key)]


def check_buckets(most: int) -> int:
    """The storage option ``buckets``, within the module's bounds of n."""
    if isinstance(most, bool) or not isinstance(most, int) or not 2 <= most <= 1024:
        raise ValueError(f"buckets must be an integer from 2 to 1024, not {most!r}")
    return most


def check_ban(seconds: Optional[int]) -> Optional[int]:
    """The storage option ``ban``: a lockout of that many seconds from each hit its limit
    denies (``BAN``), or none."""
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)
                                or seconds < 1):
        raise ValueError(f"ban is a whole number of seconds of at least 1, not {seconds!r}")
    return seconds


def ban_words(seconds: Optional[int], dry_run: bool) -> List[object]:
    """``BAN`` for a hit that counts (a test only looks, and bans nothing), in ms."""
    return [] if seconds is None or dry_run else ["BAN", seconds * 1000]


def buckets_for(period_ms: int, most: int) -> Optional[int]:
    """The largest n, 2 to ``most``, that divides the period, as the module requires; None
    when there is none (a period of 1 ms, or a prime number of ms above ``most``), which
    limits' periods of whole seconds never are."""
    for n in range(min(most, period_ms), 1, -1):
        if period_ms % n == 0:
            return n
    return None


def buckets_option(period_ms: int, most: int) -> List[object]:
    """``BUCKETS n``; nothing where no n fits, so the window is the exact one, never
    looser than any n would be."""
    n = buckets_for(period_ms, most)
    return [] if n is None else ["BUCKETS", n]


def gcra_words(prefix: str, key: str, amount: int, expiry: int, cost: int,
               dry_run: bool, ban: Optional[int] = None) -> List[object]:
    """``CL.THROTTLE`` with a burst of ``amount``, refilling ``amount`` per ``expiry`` s."""
    words = ["CL.THROTTLE", gcra_key(prefix, key), amount - 1, amount, expiry * 1000, cost,
             "MS"]
    return words + (["DRYRUN"] if dry_run else []) + ban_words(ban, dry_run)


def fixed_words(prefix: str, key: str, amount: int, expiry: int, cost: int,
                dry_run: bool, ban: Optional[int] = None) -> List[object]:
    """``CL.FIXED`` counting denied hits, as limits' ``incr`` then compare does. In seconds,
    as limits' ``EXPIRE`` is: one argument fewer to read and to propagate on every hit."""
    words = ["CL.FIXED", fixed_key(prefix, key), amount, expiry, cost, "COUNTDENIED"]
    # In seconds, as the call's own period.
    lockout = [] if ban is None or dry_run else ["BAN", ban]
    return words + (["DRYRUN"] if dry_run else []) + lockout


def window_words(prefix: str, key: str, limit: int, expiry: int,
                 amount: int, ban: Optional[int] = None) -> List[object]:
    """``CL.WINDOW``: ``amount`` entries, admitted only if all fit, as limits acquires them."""
    return ["CL.WINDOW", window_key(prefix, key), limit, expiry * 1000, amount, "MS",
            *ban_words(ban, False)]


def buckets_words(prefix: str, key: str, limit: int, expiry: int, most: int, cost: int,
                  dry_run: bool, ban: Optional[int] = None) -> List[object]:
    """``CL.WINDOW … BUCKETS n``, with n from ``buckets_for``."""
    period_ms = expiry * 1000
    words = ["CL.WINDOW", buckets_key(prefix, key), limit, period_ms, cost, "MS",
             *buckets_option(period_ms, most)]
    return words + (["DRYRUN"] if dry_run else []) + ban_words(ban, dry_run)


def admitted(reply: Sequence) -> bool:
    return int(reply[0]) == 0


def decision(reply: Sequence, unit_ms: int = 1) -> Tuple[bool, int, int]:
    """``(admitted, remaining, reset_after_ms)`` of a reply whose waits are in units of
    ``unit_ms`` milliseconds."""
    return int(reply[0]) == 0, int(reply[2]), int(reply[4]) * unit_ms


def window_stats_reset(reset_after_ms: int) -> float:
    """limits' reset time: an instant in seconds since the epoch, on this host's clock."""
    return time.time() + reset_after_ms / 1000


def moving_window(reply: Sequence, expiry: int) -> Tuple[float, int]:
    """limits' ``(window_start, count)`` from the script's ``[count, ms until the oldest
    leaves]``: the oldest live unit entered ``expiry`` before it leaves."""
    count, oldest_leaves_ms = int(reply[0]), int(reply[1])
    now = time.time()
    if count == 0:
        return now, 0
    return now + oldest_leaves_ms / 1000 - expiry, count


def gcra_next_unit_ms(amount: int, expiry: int, remaining: int, reset_after_ms: int) -> float:
    """When the next unit comes back (0 when none is taken), as limits' moving and sliding
    windows report their reset, from a GCRA peek: the whole limit is back ``reset_after``
    from now, one unit every ``expiry / amount``, so the first is back that much sooner for
    each other unit taken."""
    taken = amount - remaining
    if taken <= 0:
        return 0.0
    interval_ms = expiry * 1000 / amount
    return max(0.0, reset_after_ms - (taken - 1) * interval_ms)


class MemoryGcra:
    """The same algorithm as ``CL.THROTTLE``, in process, for limits' memory storages: the
    theoretical arrival time of each key, in nanoseconds, under a lock."""

    # Drained keys are dropped when the table has doubled since the last sweep: a sweep per
    # call would cost every hit the whole table.
    SWEEP_FROM = 1024

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tats: Dict[str, int] = {}
        self.sweep_at = self.SWEEP_FROM

    def decide(self, key: str, amount: int, expiry: int, cost: int,
               dry_run: bool) -> Tuple[bool, int, int]:
        """``(admitted, remaining, reset_after_ms)``, as ``decision`` reads a reply."""
        interval = expiry * NANOS // amount
        tolerance = interval * amount
        now = time.time_ns()
        with self.lock:
            tat = max(self.tats.get(key, now), now)
            new_tat = tat + interval * cost
            fits = new_tat - tolerance <= now
            if fits and cost > 0 and not dry_run:
                self.tats[key] = new_tat
            held = (new_tat if fits else tat) - now
            if len(self.tats) >= self.sweep_at:
                # Drained keys go, as the module's expire.
                for stale in [k for k, t in self.tats.items() if t <= now]:
                    del self.tats[stale]
                self.sweep_at = max(self.SWEEP_FROM, 2 * len(self.tats))
        remaining = min(max(tolerance - held, 0) // interval, amount)
        return fits, remaining, -(-held // MILLIS)

    def clear(self, key: str) -> None:
        with self.lock:
            self.tats.pop(key, None)


_memory_lock = threading.Lock()


def in_memory(storage) -> MemoryGcra:
    """The storage's own TATs, kept on it, so that they live and go with it."""
    with _memory_lock:
        gcra = getattr(storage, "_redis_cell_gcra", None)
        if gcra is None:
            gcra = MemoryGcra()
            storage._redis_cell_gcra = gcra
        return gcra

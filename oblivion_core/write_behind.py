"""The engine's lock, with write-behind: work queued under it runs after the call returns.

A recall's feedback (the boosts of what it returned, spreading to linked memories,
promotions out of the archive, their journal entries) changes state that the recall's own
answer does not depend on. :class:`EngineLock` lets the engine queue that work
(:meth:`EngineLock.later`) and return; a worker thread applies it right after the lock is
released, and whoever takes the lock first applies whatever is still queued before doing
anything else. So every call (a read, a write, ``maintain()``, ``close()``) sees the state
with the feedback of every recall that returned before it, exactly as if the recall had
applied it itself, and the caller does not wait for it (0.6-0.7 ms of a recall at 10k
memories, measured with ``bench/latency.py``).

Queued work runs in order, under the lock, only when the lock is taken from outside (never
in the middle of a call that re-enters it). A queued job that fails does not fail the
unrelated call that happened to take the lock: it is logged on the ``oblivion_core``
logger (the engine's jobs handle their own failures, see ``Oblivion._feedback``).

:meth:`EngineLock.due` runs a job under the lock a few seconds later on a timer: the engine
uses it to hand batched activation updates to the store's writer within
``StateDB.DEFER_SECONDS`` even when no further call comes.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable

from oblivion_core import forks

logger = logging.getLogger("oblivion_core")


class EngineLock:
    """A re-entrant lock that runs queued jobs when it is next taken from outside, and
    has a worker take it right after each release that leaves jobs queued."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0  # how deep the holder is; changed only while holding the lock
        self._queued: deque[Callable[[], None]] = deque()
        self._scheduled = False  # the worker is on its way to take the lock
        # a daemon thread: a call stuck on another thread (holding the lock) must not
        # keep the interpreter from exiting; the engine's close at exit (atexit) runs
        # whatever is still queued, and gives up on a lock held too long
        self._worker: threading.Thread | None = None
        self._wake = threading.Event()
        self._timer: threading.Timer | None = None  # see due()
        self._stopped = False
        #: run each time the lock is taken from outside (a call begins), before the
        #: queued jobs
        self.on_call: Callable[[], None] | None = None
        #: the error a call gets in a process forked after the lock was made (its state
        #: is the parent's: the lock may be held for good by a thread that is gone)
        self.in_child: Callable[[], BaseException] = lambda: RuntimeError(
            "this object was made before the process forked; make a new one in this process"
        )
        self._generation = forks.generation()

    @property
    def inherited(self) -> bool:
        """Whether this is a process forked after the lock was made."""
        return self._generation != forks.generation()

    def refuse_inherited(self) -> None:
        """Raise :attr:`in_child`'s error in a process forked after the lock was made."""
        if self.inherited:
            raise self.in_child()

    def __enter__(self) -> EngineLock:
        self.refuse_inherited()
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1 and self.on_call is not None:
            self.on_call()
        if self._depth == 1 and self._queued:
            try:
                self._run_queued()
            except BaseException:  # an interrupt: ``with`` will not call __exit__
                self.__exit__()
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        schedule = self._depth == 0 and bool(self._queued) and not self._scheduled
        if schedule:
            self._scheduled = True
        self._lock.release()
        if schedule:
            self._schedule()

    def acquire(self, timeout: float) -> bool:
        """Take the lock as ``with`` does, waiting at most ``timeout`` seconds; ``True``
        if taken (then :meth:`release` it)."""
        self.refuse_inherited()
        if not self._lock.acquire(timeout=timeout):
            return False
        try:
            self.__enter__()  # re-entrant: the depth, and the queue run
        finally:
            self._lock.release()
        return True

    def release(self) -> None:
        """Release the lock taken with :meth:`acquire`."""
        self.__exit__()

    @property
    def outermost(self) -> bool:
        """Whether the holder took the lock from outside (not re-entering it)."""
        return self._depth == 1

    def later(self, job: Callable[[], None]) -> None:
        """Queue ``job`` (call while holding the lock) to run after the call returns."""
        if self._depth < 1:
            raise RuntimeError("EngineLock.later() needs the lock held")
        self._queued.append(job)

    def due(self, seconds: float, job: Callable[[], None]) -> None:
        """Run ``job`` under the lock ``seconds`` from now, on a daemon timer thread
        (call while holding the lock). While one timed job waits, further calls are
        ignored: for work that must happen soon even if no other call comes."""
        if self._timer is not None or self._stopped:
            return
        timer = threading.Timer(seconds, self._on_timer, args=(job,))
        timer.daemon = True
        try:
            timer.start()
        except RuntimeError:  # no new threads while the interpreter shuts down: the
            return  # next call, or the close at exit, does the job's work
        self._timer = timer

    def settle(self) -> None:
        """Return once every job queued before this call has run."""
        with self:
            pass

    def stop(self) -> None:
        """No more worker jobs (call while holding the lock, once the queue is empty).

        Does not wait for a worker job blocked on the lock: it finds the queue empty."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        self._wake.set()  # the worker ends

    def _run_queued(self) -> None:
        while self._queued:
            job = self._queued.popleft()
            try:
                job()
            except Exception:  # the engine's jobs log their own; this is the backstop
                logger.exception("a queued engine job failed")

    def _schedule(self) -> None:
        if self._stopped:
            return
        if self._worker is None:
            worker = threading.Thread(
                target=_serve,
                args=(weakref.ref(self), self._wake),
                name="oblivion-feedback",
                daemon=True,
            )
            try:
                worker.start()
            except RuntimeError:  # the interpreter shuts down: the next call runs the jobs
                self._scheduled = False
                return
            self._worker = worker
            weakref.finalize(self, self._wake.set)  # collected unclosed: the worker ends
        self._wake.set()

    def _on_timer(self, job: Callable[[], None]) -> None:
        with self:
            self._timer = None
            if self._stopped:
                return
            try:
                job()
            except Exception:
                logger.exception("a timed engine job failed")

    def _drain(self) -> None:
        with self:  # taking the lock runs the queue
            self._scheduled = False


def _serve(ref: weakref.ReferenceType[EngineLock], wake: threading.Event) -> None:
    """The worker: take the lock (which runs the queue) each time it is woken; it holds
    the lock object only while draining, so an instance dropped without ``close()`` is
    collected and its worker ends."""
    while True:
        wake.wait()
        wake.clear()  # jobs queued from here on are run by the drain below
        lock = ref()
        if lock is None or lock._stopped:
            return
        lock._drain()
        del lock

"""Signals while writing: SIGTERM and SIGHUP turned into an exception that cleanup code sees,
and a short critical section (renames into place) that signals wait for. Standard library
only; archscope.writes and the checkpoint writer use it."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


class SignalGuard:
    """What `cleanup_on_signals` yields: `check()` raises the SystemExit of a signal that
    arrived (a second chance: a handler's exception raised while C or Rust code held the
    interpreter can be swallowed there, and the process would go on to finish and exit 0)."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def check(self) -> None:
        """Before committing: stop if a SIGTERM or SIGHUP arrived."""
        if self.received:
            raise SystemExit(128 + self.received[0])


@contextlib.contextmanager
def cleanup_on_signals() -> Iterator[SignalGuard]:
    """Inside the `with`, SIGTERM and SIGHUP raise SystemExit(128 + signal number) (and Ctrl-C
    its usual KeyboardInterrupt), so `try/finally` and `except BaseException` cleanup runs
    instead of the process dying on the spot. Once one arrives, further ones are ignored until
    the `with` is left, so the cleanup is not itself interrupted. The previous handlers are
    restored on exit. Signals already ignored (nohup) stay ignored; off the main thread
    (where Python cannot set handlers) this does nothing. Writers call the guard's `check()`
    before committing, and leaving the `with` raises a signal's SystemExit that something
    swallowed, so that a terminated run never exits 0."""
    guard = SignalGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    ours = list(_TERMINATING)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        ours.append(signal.SIGINT)

    def handler(signum, _frame):
        for sig in ours:
            signal.signal(sig, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        guard.received.append(signum)
        with contextlib.suppress(Exception):
            sys.stderr.write(f"\n{signal.Signals(signum).name} received: removing what was "
                             f"partly written\n")
        raise SystemExit(128 + signum)

    old = {}
    for sig in ours:
        before = signal.getsignal(sig)
        if before is None or before is signal.SIG_IGN:
            continue
        old[sig] = before
        signal.signal(sig, handler)
    try:
        yield guard
    finally:
        for sig, before in old.items():
            signal.signal(sig, before)
    guard.check()


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP back during a short critical section (renames into
    place) and deliver them to the previous handlers just after it. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {}
    for sig in (signal.SIGINT, *_TERMINATING):
        before = signal.getsignal(sig)
        if before is not None and before is not signal.SIG_IGN:
            old[sig] = before
            signal.signal(sig, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, before in old.items():
            signal.signal(sig, before)
        for signum in dict.fromkeys(pending):
            before = old[signum]
            if callable(before):
                before(signum, None)
            else:  # SIG_DFL: what the signal would have done
                signal.raise_signal(signum)


class TimeLimitExceeded(Exception):
    """What `time_limit` raises in the code it limits."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeLimitExceeded inside the `with` once `seconds` of wall time have passed: for
    Python code running input that is itself a program (a chat template's loops). A timer
    signal (SIGALRM) interrupts Python code between bytecodes, not inside one C call. Off the
    main thread, or where the system has no such timer, nothing is limited."""
    if threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return

    def handler(_signum, _frame):
        raise TimeLimitExceeded(f"still running after {seconds:g} s")

    before = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)

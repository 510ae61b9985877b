"""The store's reader–writer lock starves neither side (phase-fair).

Before, waiting writers always went first: threads writing back to back kept the readers out (a
thread calling context() beside three threads calling add_learning got p95 12 s in a 15-second run). Now the readers waiting when a
writer releases the lock go before the next writer, and a waiting writer still holds back the
readers that arrive after it.
"""

from __future__ import annotations

import threading
import time

from graphmem.store.locks import ReadWriteLock

HOLD_S = 0.005


def _started(target: object, *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def _wait_until(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.001)
    assert condition(), "timed out"  # type: ignore[operator]


def test_a_reader_waiting_at_a_writers_release_goes_before_the_next_writer() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    lock.acquire_exclusive()  # writer 1 holds it

    def read() -> None:
        with lock.shared():
            order.append("reader")

    def write() -> None:
        with lock.exclusive():
            order.append("writer 2")

    reader = _started(read)
    _wait_until(lambda: lock._readers_waiting == 1)
    writer = _started(write)
    _wait_until(lambda: lock._writers_waiting == 1)
    lock.release_exclusive()
    reader.join(5)
    writer.join(5)
    assert order == ["reader", "writer 2"]


def test_a_waiting_writer_holds_back_readers_that_come_after_it() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    lock.acquire_shared()  # a reader holds it

    def write() -> None:
        with lock.exclusive():
            order.append("writer")

    def read() -> None:
        with lock.shared():
            order.append("late reader")

    writer = _started(write)
    _wait_until(lambda: lock._writers_waiting == 1)
    late = _started(read)
    _wait_until(lambda: lock._readers_waiting == 1)
    lock.release_shared()
    writer.join(5)
    late.join(5)
    assert order == ["writer", "late reader"]


def _hammer(lock: ReadWriteLock, exclusive: bool, stop: threading.Event) -> None:
    while not stop.is_set():
        with lock.exclusive() if exclusive else lock.shared():
            time.sleep(HOLD_S)


def _longest_wait(lock: ReadWriteLock, exclusive: bool, rounds: int) -> float:
    """The longest of ``rounds`` waits for the lock, measured on a thread under a watchdog (a
    starved thread would wait forever)."""
    waits: list[float] = []

    def measure() -> None:
        for _ in range(rounds):
            start = time.monotonic()
            with lock.exclusive() if exclusive else lock.shared():
                waits.append(time.monotonic() - start)
            time.sleep(HOLD_S)

    thread = _started(measure)
    thread.join(30)
    assert not thread.is_alive(), f"starved: {len(waits)} of {rounds} acquisitions in 30 s"
    return max(waits)


def test_back_to_back_writers_do_not_starve_a_reader() -> None:
    lock, stop = ReadWriteLock(), threading.Event()
    writers = [_started(_hammer, lock, True, stop) for _ in range(3)]
    try:
        time.sleep(0.05)
        longest = _longest_wait(lock, False, 20)
    finally:
        stop.set()
        for w in writers:
            w.join(5)
    # at most one write (5 ms) and the reads ahead of it, with ample room for a busy machine
    assert longest < 1.0, f"a reader waited {longest:.3f} s"


def test_back_to_back_readers_do_not_starve_a_writer() -> None:
    lock, stop = ReadWriteLock(), threading.Event()
    readers = [_started(_hammer, lock, False, stop) for _ in range(3)]
    try:
        time.sleep(0.05)
        longest = _longest_wait(lock, True, 20)
    finally:
        stop.set()
        for r in readers:
            r.join(5)
    assert longest < 1.0, f"a writer waited {longest:.3f} s"

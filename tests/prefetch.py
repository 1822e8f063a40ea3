"""The TensorFlow programs that fixtures run, started when the session's tests are
collected, one at a time in a background thread, in the order the tests will need them.

The suite runs in one process, and most of its time a test waits on a subprocess (a
TensorFlow program) or draws a Textual app: one of the machine's two cores is idle.
A fixture that runs programs for minutes (the conformance scenarios under both dumpers,
the watch tier's programs, the cases of tests/programs/*.py) would stall every test
behind it; here its programs run on the idle core while the tests before it run, and
the fixture, when its first test asks, takes what they made (or waits for the rest).

A fixture's maker is registered with `prefetchable` under the fixture's name; the
fixture calls `made` with it. Nothing is started unless a collected test uses the
fixture, nor under pytest-xdist's workers (`-n`: the workers fill the cores), nor with
`TFDBG_TUI_NO_PREFETCH=1`. A maker's exception is raised in the fixture, as if it had
run there.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

_makers: dict[str, Callable[[Path], Any]] = {}
_started: dict[str, Future[Any]] = {}
_lock = threading.Lock()
# The background worker: a daemon thread (a test that counts the threads running when
# it instruments its own process, tests/instrument/test_notices_preflight.py, counts
# only non-daemon ones, as a user's program's would be), fed by a queue.
_jobs: queue.Queue[tuple[Future[Any], Callable[[Path], Any], Path] | None] = queue.Queue()
_worker: threading.Thread | None = None


def _work() -> None:
    while (job := _jobs.get()) is not None:
        future, maker, root = job
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(maker(root))
        except BaseException as error:  # noqa: BLE001 - raised again in the fixture
            future.set_exception(error)


def prefetchable(name: str) -> Callable[[Callable[[Path], T]], Callable[[Path], T]]:
    """Register a fixture's maker (``maker(root) -> result``: its programs run into the
    fresh directory ``root``) under the fixture's ``name``."""

    def register(maker: Callable[[Path], T]) -> Callable[[Path], T]:
        known = _makers.get(name)
        # A conftest imported twice (as ``conftest`` and as ``tests.conftest``) registers
        # its makers twice: the same source, not two makers.
        if known is not None and _source(known) != _source(maker):
            raise ValueError(f"two makers for the fixture {name!r}")
        _makers[name] = maker
        return maker

    return register


def in_background() -> bool:
    """Whether the calling maker runs in the background worker (where it should take one
    core: the tests run beside it), not in its fixture."""
    return threading.current_thread() is _worker


def _source(maker: Callable[..., Any]) -> tuple[str, int]:
    code = maker.__code__
    return code.co_filename, code.co_firstlineno


def made(request: pytest.FixtureRequest, name: str) -> Any:
    """The result of fixture ``name``'s maker: started at collection (waited for), or
    run now into a fresh directory."""
    with _lock:
        future = _started.pop(name, None)
    if future is not None:
        return future.result()
    return _makers[name](_factory(request.config).mktemp(name))


def start(session: pytest.Session) -> None:
    """Start the makers of the fixtures the collected tests use, in the order of their
    first use (`pytest_collection_finish`)."""
    global _worker
    if (
        os.environ.get("TFDBG_TUI_NO_PREFETCH") == "1"
        or os.environ.get("PYTEST_XDIST_WORKER")
        or getattr(session.config.option, "collectonly", False)
    ):
        return
    wanted: list[str] = []
    for item in session.items:
        for name in getattr(item, "fixturenames", ()):
            if name in _makers and name not in wanted:
                wanted.append(name)
    if not wanted:
        return
    factory = _factory(session.config)
    with _lock:
        for name in wanted:
            future: Future[Any] = Future()
            _started[name] = future
            _jobs.put((future, _makers[name], factory.mktemp(name)))
    _worker = threading.Thread(target=_work, name="prefetch", daemon=True)
    _worker.start()


def _factory(config: pytest.Config) -> pytest.TempPathFactory:
    """The session's `tmp_path_factory` (what the fixture of that name returns)."""
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    return factory


def stop(*, wait: bool = True) -> None:
    """At the session's end: cancel what no test asked for (a deselected or failed-early
    run) and wait for the maker under way (its program must not outlive the session),
    unless the session was interrupted (Ctrl-C reached its program too)."""
    with _lock:
        for future in _started.values():
            future.cancel()
        _started.clear()
    if _worker is not None:
        _jobs.put(None)
        if wait:
            _worker.join()

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
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

_makers: dict[str, Callable[[Path], Any]] = {}
_started: dict[str, Future[Any]] = {}
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


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
    global _pool
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
    _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch")
    factory = _factory(session.config)
    with _lock:
        for name in wanted:
            _started[name] = _pool.submit(_makers[name], factory.mktemp(name))


def _factory(config: pytest.Config) -> pytest.TempPathFactory:
    """The session's `tmp_path_factory` (what the fixture of that name returns)."""
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    return factory


def stop() -> None:
    """At the session's end: cancel what no test asked for (a deselected or failed-early
    run) and let the running maker finish."""
    with _lock:
        for future in _started.values():
            future.cancel()
        _started.clear()
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)

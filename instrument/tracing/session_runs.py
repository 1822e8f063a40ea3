"""TF1 `Session.run` calls recorded as executions named by their fetches, so that TF1
training loops have steps.

A ``tf.compat.v1.Session`` graph runs no eager function call: without a record of each
``Session.run``, every trace of a TF1 loop falls in one step. While a dump is enabled,
``BaseSession.run`` (the public ``Session.run``, also under ``MonitoredSession``) is
wrapped: after each run the traces its ``numpy_function`` ops handed over are drained, then the
run is recorded as an execution of its graph, named by its fetches
(`reader.format.session_run_op_type`) and numbered per fetches as calls of a function
are. Traces written while it ran carry the index that record gets (the writer's
default), so they belong to it. Runs through ``Session.make_callable`` are not recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from instrument.tf_internals.entry_points import session_class
from reader import format as fmt

# Fetch structures can nest (lists, tuples, dicts); names past this many are not read.
MAX_FETCH_NAMES = 16


def fetch_names(fetches: Any, aliases: dict[str, str]) -> list[str]:
    """The names of a ``Session.run``'s fetches, in order: a tensor's or an op's name
    (the program's name where the tensor is one of our traced stand-ins, ``aliases``),
    a string as given; nested lists, tuples and dicts flattened."""
    names: list[str] = []

    def visit(item: Any) -> None:
        if len(names) >= MAX_FETCH_NAMES:
            return
        if isinstance(item, dict):
            for value in item.values():
                visit(value)
        elif isinstance(item, (list, tuple)):
            for value in item:
                visit(value)
        elif isinstance(item, (str, bytes)):
            names.append(item.decode(errors="replace") if isinstance(item, bytes) else item)
        else:
            name = getattr(item, "name", None)
            names.append(
                aliases.get(str(name), str(name)) if name is not None else type(item).__name__
            )

    visit(fetches)
    return names


class SessionRunHook:
    """Wraps ``BaseSession.run`` while installed, calling ``on_run(session, fetches)``
    after each run (also one that raised).

    Args:
        on_run: Records one run.
    """

    def __init__(self, on_run: Callable[[Any, Any], None]) -> None:
        self._on_run = on_run
        self._original: Any = None
        self._local = threading.local()

    def install(self) -> None:
        original = session_class().run
        self._original = original
        hook = self

        def run(session_self: Any, fetches: Any, *args: Any, **kwargs: Any) -> Any:
            # A run inside a run (a numpy_function that runs a session) is recorded once.
            if getattr(hook._local, "running", False):
                return original(session_self, fetches, *args, **kwargs)
            hook._local.running = True
            try:
                return original(session_self, fetches, *args, **kwargs)
            finally:
                hook._local.running = False
                hook._on_run(session_self, fetches)

        run.__wrapped__ = original  # type: ignore[attr-defined]
        run.__doc__ = original.__doc__
        session_class().run = run

    def remove(self) -> None:
        if (
            self._original is not None
            and getattr(session_class().run, "__wrapped__", None) is self._original
        ):
            session_class().run = self._original
        self._original = None


def session_run_op_type(fetches: Any, aliases: dict[str, str]) -> str:
    """The op type recording a run of ``fetches`` (``aliases`` as in `fetch_names`)."""
    return fmt.session_run_op_type(fetch_names(fetches, aliases))

"""Op callbacks in every Python thread, not only the one that enabled the dump: the
callback in threads started later.

TensorFlow keeps op callbacks per thread: ``add_op_callback`` registers for the calling
thread, and a ``tf.function`` first called from another thread (a training loop in a
background thread, a server's worker threads) would run unseen. `ThreadHook` uses
``threading.setprofile``, whose function every thread started by `threading` calls
first: on its first event in a new thread it registers the callback there and
removes itself, so the thread then runs at full speed. On Python 3.12+
``threading.setprofile_all_threads`` also reaches threads that were running before
enable; on 3.11 those are named in a ``threads_before_enable`` notice instead.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from instrument.notices import OWN_THREAD_PREFIX

# threading.setprofile_all_threads (Python 3.12+) also reaches running threads.
REACHES_RUNNING_THREADS = sys.version_info >= (3, 12)


class ThreadHook:
    """Registers an op callback in each thread the first time it runs Python code.

    Args:
        register: Registers the callback for the calling thread.
        enabling_thread: The thread that registered it already.
    """

    def __init__(self, register: Callable[[], None], enabling_thread: threading.Thread) -> None:
        self._register = register
        self._enabling_thread = enabling_thread
        # Per thread: registered already. Thread-local, not a set of thread idents:
        # idents are reused once a thread ends, and a new thread with an ended one's
        # ident must be registered too.
        self._registered = threading.local()
        self._previous: Any = None
        self._active = False

    def install(self) -> None:
        """Start registering in new threads (and running ones, on Python 3.12+)."""
        self._previous = threading.getprofile()
        self._active = True
        if sys.version_info >= (3, 12):  # REACHES_RUNNING_THREADS, as the type check reads it
            threading.setprofile_all_threads(self._first_event)
            # The calling thread needs no hook: its callback is registered.
            sys.setprofile(self._previous)
        else:
            threading.setprofile(self._first_event)

    def remove(self) -> None:
        """Stop registering; threads already registered keep their (closed) callback."""
        self._active = False
        if threading.getprofile() is self._first_event:
            threading.setprofile(self._previous)

    def _first_event(self, frame: Any, event: str, arg: Any) -> None:
        previous = self._previous
        # From now on this thread runs the profile function it would have run anyway.
        sys.setprofile(previous)
        thread = threading.current_thread()
        if (
            self._active
            and not thread.name.startswith(OWN_THREAD_PREFIX)
            and thread is not self._enabling_thread
            and not getattr(self._registered, "done", False)
        ):
            self._registered.done = True
            self._register()
        if previous is not None:
            previous(frame, event, arg)

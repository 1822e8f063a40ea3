"""Python stack capture with interning: each source file, frame and stack is written once.

Stacks are taken with ``sys._getframe`` and a walk along ``f_back``: no ``traceback``
or ``inspect`` (they read source lines and allocate per frame). A frame is keyed by its
code object and instruction offset (``f_lasti``), so the common case (a stack seen
before) costs one dict lookup per frame and one for the whole stack. A new frame also
records the column span of its instruction (Python 3.11+ ``co_positions``): the exact
expression that made the op, converted from UTF-8 byte offsets to character columns
of the snapshot's line (only frames of files whose text is read get a span).

Two rewrites make the stacks say what the user wrote:

- AutoGraph runs a converted copy of each ``tf.function`` body from a generated file;
  TensorFlow keeps a per-thread map from generated lines back to the user's lines, and
  frames are remapped through it.
- Under ``tf.distribute.MirroredStrategy`` ops are created in replica threads whose
  own stacks start inside TensorFlow. The frames of the thread that called
  ``strategy.run`` (blocked in TensorFlow's replica dispatch while the replica runs)
  are put in front.

This module imports TensorFlow only to read AutoGraph's source map, and only when that
map exists (TensorFlow is then already imported).
"""

from __future__ import annotations

import gc
import itertools
import os
import sys
import sysconfig
import threading
from collections.abc import Iterable
from types import FrameType
from typing import TYPE_CHECKING

from instrument.tf_internals import debug_once, graph_frames
from instrument.tracing.autograph_spans import AutoGraphSpans

if TYPE_CHECKING:
    from instrument.dump.writer import DumpWriter

# Source files larger than this are recorded without their text (`omitted: too_large`).
MAX_SNAPSHOT_BYTES = 4 << 20

# The whole `instrument` package, one level above this module's `tracing/`.
_INSTRUMENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_EXAMPLES_DIR = os.path.join(_INSTRUMENT_DIR, "examples") + os.sep
# TensorFlow's replica dispatch: the spawning thread waits inside this function while a
# MirroredStrategy replica thread runs the user's function.
_REPLICA_DISPATCH_FILE = os.path.join("distribute", "mirrored_run.py")
_REPLICA_DISPATCH_FUNCTION = "_call_for_each_replica"
_REPLICA_THREAD_CLASS = "_MirroredReplicaThread"


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    prefixes = {
        os.path.abspath(paths[key]) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if key in paths
    }
    return tuple(sorted(prefixes))


_LIBRARY_PREFIXES = _library_prefixes()


def is_library_file(path: str) -> bool:
    """True for files of Python itself, installed packages and this instrumentation.

    The example programs shipped in ``instrument/examples`` count as user code: they
    stand for the user's training script.
    """
    if path.startswith(_EXAMPLES_DIR):
        return False
    if path.startswith(_INSTRUMENT_DIR) or path.startswith(_LIBRARY_PREFIXES):
        return True
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts


def _read_source_lines(path: str) -> tuple[list[str] | None, str | None]:
    """A file's lines, or None and the reason they are missing."""
    try:
        if os.path.getsize(path) > MAX_SNAPSHOT_BYTES:
            return None, "too_large"
        with open(path, encoding="utf-8", errors="replace") as source:
            return source.read().splitlines(), None
    except OSError:
        # Frozen modules ("<frozen ...>"), "<string>" and deleted files have no text.
        return None, "unreadable"


def _current_frames() -> dict[int, FrameType]:
    """`sys._current_frames`, with the garbage collector paused during the call.

    Up to Python 3.11 the call holds the interpreter's thread list lock while it makes
    frame objects; a collection started by one of those allocations can finalize an
    object whose deallocation takes that lock again, and the thread waits on itself
    forever (CPython issue 106883, fixed in 3.12). Seen here as a hang, about once in
    ten runs, of an eager `strategy.run` whose replica threads record their stacks.
    """
    if not gc.isenabled():
        return sys._current_frames()
    gc.disable()
    try:
        return sys._current_frames()
    finally:
        gc.enable()


def _frame_chain(frame: FrameType | None) -> list[FrameType]:
    """The frames from the outermost call down to ``frame``."""
    chain = []
    while frame is not None:
        chain.append(frame)
        frame = frame.f_back
    chain.reverse()
    return chain


def _autograph_source_map(
    thread_idents: tuple[int, ...],
) -> dict[tuple[str, int], tuple[str, int, str | None]] | None:
    """The AutoGraph map (generated file, line) -> (user file, line, function) of the
    first of ``thread_idents`` that has one, completed by the others' maps."""
    found: dict[tuple[str, int], tuple[str, int, str | None]] | None = None
    for ident in reversed(thread_idents):
        mappers = graph_frames.autograph_source_mappers(ident)
        if not mappers or len(mappers) < 2:  # only TensorFlow's empty sentinel
            continue
        try:
            source_map = mappers[-1].get_effective_source_map()
        except Exception:  # an unmapped frame beats a broken program
            debug_once(
                "source_map",
                "tfdbg-tui: AutoGraph's source map is "
                "unreadable; frames stay in the generated code",
            )
            continue
        found = source_map if found is None else {**found, **source_map}
    return found


class StackRecorder:
    """Captures the current Python stack and returns its interned stack id.

    Thread-safe. Frames of this package at the innermost end of a stack (the
    instrumentation's own callback) are left out; every other frame is kept.

    Args:
        writer: Receives the file, frame and stack definitions.
        snapshot_library_sources: Record the text of library files too (TensorFlow,
            Keras, the standard library); by default only the user's files are
            snapshotted.
    """

    def __init__(self, writer: DumpWriter, *, snapshot_library_sources: bool = False) -> None:
        self._writer = writer
        self._snapshot_library_sources = snapshot_library_sources
        self._lock = threading.Lock()
        self._file_ids: dict[str, int] = {}
        self._file_lines: dict[str, list[str] | None] = {}  # the text read, for spans
        # (code object, instruction offset) -> frame id for plain frames;
        # AutoGraph-remapped frames are keyed by what they were remapped to.
        self._code_frame_ids: dict[tuple[object, int], int] = {}
        self._location_frame_ids: dict[tuple[str, int, str, Span | None], int] = {}
        self._stack_ids: dict[tuple[int, ...], int] = {}
        self._autograph_spans = AutoGraphSpans()

    def capture(self) -> int:
        """Intern the calling thread's stack (outermost frame first); return its id."""
        frame: FrameType | None = sys._getframe(1)  # pylint: disable=protected-access
        while (
            frame is not None
            and frame.f_code.co_filename.startswith(_INSTRUMENT_DIR)
            and not frame.f_code.co_filename.startswith(_EXAMPLES_DIR)
        ):
            frame = frame.f_back
        me = threading.get_ident()
        with self._lock:
            frame_ids = []
            threads: tuple[int, ...] = (me,)
            if type(threading.current_thread()).__name__ == _REPLICA_THREAD_CLASS:
                spawner, frames = self._spawning_thread_frames(me)
                frame_ids = self._frame_ids(frames, (spawner,))
                # A replica function defined inside the tf.function was converted with
                # it: its generated lines are in the map of the thread that traces.
                threads = (me, spawner)
            frame_ids += self._frame_ids(_frame_chain(frame), threads)
            key = tuple(frame_ids)
            stack_id = self._stack_ids.get(key)
            if stack_id is None:
                stack_id = self._writer.add_stack(key)
                self._stack_ids[key] = stack_id
            return stack_id

    @staticmethod
    def _spawning_thread_frames(me: int) -> tuple[int, list[FrameType]]:
        """The thread blocked in MirroredStrategy's replica dispatch, and its frames."""
        for ident, top in _current_frames().items():
            if ident == me:
                continue
            chain = _frame_chain(top)
            for depth, frame in enumerate(chain):
                code = frame.f_code
                if code.co_name == _REPLICA_DISPATCH_FUNCTION and code.co_filename.endswith(
                    _REPLICA_DISPATCH_FILE
                ):
                    return ident, chain[: depth + 1]
        debug_once(
            "replica_dispatch",
            "tfdbg-tui: no thread in %s (%s); "
            "replica stacks lack the frames of strategy.run's caller",
            _REPLICA_DISPATCH_FUNCTION,
            _REPLICA_DISPATCH_FILE,
        )
        return me, []

    def _frame_ids(self, frames: Iterable[FrameType], threads: tuple[int, ...]) -> list[int]:
        """Frame ids, remapped through the AutoGraph maps of ``threads`` (the thread
        running them first)."""
        source_map = None
        source_map_read = False
        frame_ids = []
        for frame in frames:
            code = frame.f_code
            key = (code, frame.f_lasti)
            frame_id = self._code_frame_ids.get(key)
            if frame_id is None:
                if not source_map_read:
                    source_map = _autograph_source_map(threads)
                    source_map_read = True
                line = frame.f_lineno or code.co_firstlineno
                frame_id = self._new_frame(
                    code.co_filename,
                    line,
                    code.co_name,
                    source_map,
                    _code_position(code, frame.f_lasti, line),
                )
                # Remapped frames depend on the AutoGraph map in force; only frames
                # that were not remapped are cached by code object.
                if source_map is None or (code.co_filename, line) not in source_map:
                    self._code_frame_ids[key] = frame_id
            frame_ids.append(frame_id)
        return frame_ids

    def _new_frame(
        self,
        filename: str,
        line: int,
        function: str,
        source_map: dict[tuple[str, int], tuple[str, int, str | None]] | None,
        position: Span | None,
    ) -> int:
        origin = source_map.get((filename, line)) if source_map is not None else None
        generated = (filename, line)
        if origin is not None:
            # AutoGraph names no function for a lambda outside any: the generated code's.
            filename, line = origin[0], origin[1]
            function = origin[2] if isinstance(origin[2], str) else function
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        file_id = self._file_id(path)
        if origin is not None and position is not None:
            # The columns are those of AutoGraph's generated code: find the user's.
            position = self._autograph_spans.user_span(
                generated[0],
                (generated[1], position[1], position[0], position[2]),
                path,
                self._file_lines.get(path),
                int(line),
            )
        elif origin is not None:
            position = None
        span = _character_span(int(line), position, self._file_lines.get(path))
        location = (path, int(line), function, span)
        frame_id = self._location_frame_ids.get(location)
        if frame_id is None:
            frame_id = self._writer.add_frame(file_id, location[1], function, span)
            self._location_frame_ids[location] = frame_id
        return frame_id

    def _file_id(self, path: str) -> int:
        file_id = self._file_ids.get(path)
        if file_id is not None:
            return file_id
        library = is_library_file(path)
        omitted: str | None
        if library and not self._snapshot_library_sources:
            lines, omitted = None, "library"
        else:
            lines, omitted = _read_source_lines(path)
        file_id = self._writer.add_source_file(path, lines, library=library, omitted=omitted)
        self._file_ids[path] = file_id
        self._file_lines[path] = lines
        return file_id


# (column, end line, end column): 0-based, end exclusive (docs/format.md, `frame`).
Span = tuple[int, int, int]


def _code_position(code, lasti: int, line: int) -> Span | None:
    """The byte-offset span of the instruction at ``lasti`` (Python 3.11+), if on ``line``.

    ``co_positions`` yields one entry per 2-byte code unit; ``f_lasti`` is a byte offset.
    """
    positions = getattr(code, "co_positions", None)
    if positions is None or lasti < 0:
        return None
    found = next(itertools.islice(positions(), lasti // 2, None), None)
    if found is None:
        return None
    start_line, end_line, column, end_column = found
    if start_line != line or end_line is None or column is None or end_column is None:
        return None
    return column, end_line, end_column


def _character_span(line: int, position: Span | None, lines: list[str] | None) -> Span | None:
    """A byte-offset span as character columns of the file's text; None without text."""
    if position is None or not lines:
        return None
    column, end_line, end_column = position
    if not 1 <= line <= end_line <= len(lines):
        return None
    return (
        _character_column(lines[line - 1], column),
        end_line,
        _character_column(lines[end_line - 1], end_column),
    )


def _character_column(text: str, byte_offset: int) -> int:
    if text.isascii():
        return min(byte_offset, len(text))
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))

"""When the dump cannot be written: recording stops, the program goes on.

A write of the dump that fails (no space left, a disk quota, an I/O error, a
read-only remount, the run directory removed) stops the recording for good
(docs/instrument.md, "When the disk fills"):

- the failed write is undone (`RecordFile.cut_back`) and everything still buffered
  is dropped; from then on the writer records nothing and writes nothing;
- a `recording_stopped` notice says where recording stopped and why; to have room
  for it when the disk is full, the writer keeps a small **reserve** file in the run
  directory, deleted at that moment (and at a clean close);
- one warning on the logger ``instrument.writer`` (one line on stderr when the
  program has not configured logging) names the run directory, the error and the
  execution where recording stopped. Nothing is raised into the program.
"""

from __future__ import annotations

import errno as errno_codes
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from reader import format as fmt
from reader.contract import KIND_KEY, NoticeRecord

logger = logging.getLogger("instrument.writer")

# Bytes set aside at enable for the `recording_stopped` notice (a few hundred bytes)
# and the file system's own bookkeeping when it is full: a page or a block or two.
RESERVE_BYTES = 64 << 10


@dataclass(frozen=True)
class RecordingStop:
    """Where and why recording stopped.

    Attributes:
        error: The write's error.
        file: The segment (or other) file whose write failed, relative to the run.
        executions: Executions the program had run when recording stopped; the
            dump holds fewer (those of the last flush, up to 0.5 s, are dropped).
        traces: Graph traces the program had computed by then, likewise.
        function: The Python function of the latest eager function call, or None.
        call: Its call ordinal (the step, in a training loop), or None.
        time: Unix time of the failure.
    """

    error: OSError
    file: str
    executions: int
    traces: int
    function: str | None
    call: int | None
    time: float

    @property
    def where(self) -> str:
        """``execution 1,234 (call 56 of train_step)``."""
        text = f"execution {self.executions:,}"
        if self.function is not None and self.call is not None:
            text += f" (call {self.call:,} of {self.function})"
        return text

    @property
    def reason(self) -> str:
        """The error in one line: ``[Errno 28] No space left on device``."""
        strerror = self.error.strerror or str(self.error) or type(self.error).__name__
        code = self.error.errno
        return (
            " ".join(f"[Errno {code}] {strerror}".split())
            if code is not None
            else " ".join(strerror.split())
        )

    def notice_record(self) -> dict[str, Any]:
        """The `notice` record (docs/format.md) that says it in the dump."""
        code = self.error.errno
        return {
            KIND_KEY: NoticeRecord.KIND,
            NoticeRecord.NOTICE_KIND: fmt.NOTICE_RECORDING_STOPPED,
            NoticeRecord.LEVEL: fmt.NOTICE_WARNING,
            NoticeRecord.MESSAGE: f"recording stopped at {self.where}: {self.reason} "
            f"(writing {self.file}); the program went on unrecorded",
            NoticeRecord.DETAILS: {
                "error": self.reason,
                "errno": code,
                "errno_name": errno_codes.errorcode.get(code) if code is not None else None,
                "file": self.file,
                "executions": self.executions,
                "traces": self.traces,
                "function": self.function,
                "call": self.call,
            },
            NoticeRecord.TIME: self.time,
        }

    def warning(self, run_path: str, notice_written: bool) -> str:
        """The one line said to the user."""
        said = "; the dump says so" if notice_written else "; the dump could not say so"
        return (
            f"tfdbg-tui: recording of the dump {run_path} stopped at {self.where}: "
            f"{self.reason} (writing {self.file}); the program goes on unrecorded{said}"
        )


def make_stop(
    error: OSError,
    path: str,
    run_path: str,
    *,
    executions: int,
    traces: int,
    function: str | None,
    call: int | None,
) -> RecordingStop:
    """The `RecordingStop` of ``error``, raised writing ``path``."""
    file = os.path.relpath(path, run_path) if path else "?"
    return RecordingStop(
        error=error,
        file=file,
        executions=executions,
        traces=traces,
        function=function,
        call=call,
        time=time.time(),
    )


def reserve_path(run_path: str) -> str:
    """The reserve file of a run (not a segment: readers ignore it)."""
    return os.path.join(run_path, fmt.RESERVE_FILENAME)


def make_reserve(run_path: str) -> bool:
    """Set `RESERVE_BYTES` aside in the run directory; False when that failed."""
    path = reserve_path(run_path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, bytes(RESERVE_BYTES))
        finally:
            os.close(fd)
    except OSError as error:
        logger.debug("tfdbg-tui: no space reserve in %s: %s", run_path, error)
        release_reserve(run_path)
        return False
    return True


def release_reserve(run_path: str) -> None:
    """Delete the reserve file, giving its space back (no error if it is gone)."""
    try:
        os.remove(reserve_path(run_path))
    except FileNotFoundError:
        pass
    except OSError as error:
        logger.debug("tfdbg-tui: cannot delete the reserve of %s: %s", run_path, error)

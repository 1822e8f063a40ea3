"""Is the process that writes a run still running? Finished, stopped (on a write error),
running, killed, unknown.

A run that exited cleanly has its `end` record. A run whose recording stopped on a
write error (a full disk) never gets one, whatever its process does next: it says so
with a `recording_stopped` notice, or, when even that could not be written, by its
space reserve being gone (docs/format.md, `run`). Otherwise, without an `end`, the
process is either still running or died without closing the run (SIGKILL, the OOM
killer, a crash of the interpreter). When the run was written on this host, the
process table tells which: the run's pid is gone (or is a zombie, or belongs to a
process that started after the run did: pids are reused). On another host nothing
can be told.

Decided here once; the status line, the run picker and `report` only say it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable

from reader import format as fmt
from reader import storage

FINISHED = "finished"  # the `end` record was read
STOPPED = "stopped"  # recording stopped on a write error; the process may go on
RUNNING = "running"  # no `end` yet; the process is alive on this host
KILLED = "killed"  # no `end`, and the process is gone from this host
UNKNOWN = "unknown"  # no `end`; written on another host (running, or killed)
# The states after which nothing more is written.
ENDED = (FINISHED, STOPPED, KILLED)

# /proc gives a process's start time to the clock tick, the boot time only to the
# second: a process that started this much after the run's start is another one.
_PID_REUSE_SLACK_S = 2.0


def process_gone(host: str | None, pid: int | None, start_time: float | None) -> bool | None:
    """Whether the process ``pid`` of ``host`` that started a run at ``start_time`` is
    gone; None when that cannot be told (another host, no pid, not a POSIX system)."""
    if os.name != "posix" or not host or not pid or pid <= 0 or host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, and another user's
    except (OSError, OverflowError):  # a pid no process can have
        return None
    stat = _proc_stat(pid)
    if stat is None:
        return False
    state, started = stat
    if state in ("Z", "X"):
        return True  # killed, and not yet reaped by its parent
    return (
        start_time is not None and started is not None and started > start_time + _PID_REUSE_SLACK_S
    )


def reserve_released(run_path: str, space_reserve: bool) -> bool:
    """Whether the writer of the run at ``run_path``, which kept a space reserve
    (``space_reserve``, from its `run` record), has given it back: it does so when
    recording stops on a write error, and at a clean close after its `end`."""
    return space_reserve and not reserve_exists(run_path)


def reserve_exists(run_path: str, store: storage.Store | None = None) -> bool:
    """Whether the run's space reserve file is there (never, in a bucket: a writer
    keeps none there)."""
    store = store or storage.store_for(run_path)
    if store.remote:
        return False
    return os.path.exists(store.join(run_path, fmt.RESERVE_FILENAME))


def recording_stopped(finished: bool, notice_kinds: Iterable[str], released: bool) -> bool:
    """Whether a run's recording stopped on a write error: it has a
    `recording_stopped` notice, or no `end` and its reserve was given back
    (``released``, `reserve_released`, looked at before the run was read)."""
    return fmt.NOTICE_RECORDING_STOPPED in notice_kinds or (released and not finished)


def state_of(finished: bool, gone: bool | None, stopped: bool = False) -> str:
    """The run state (`FINISHED`, `STOPPED`, `RUNNING`, `KILLED` or `UNKNOWN`) from
    whether its `end` was read, `process_gone`, and `recording_stopped`.

    A caller that saw ``gone`` (or a released reserve) must have read the run again
    after it looked: a process that exits cleanly writes its `end` just before it
    goes (and before it gives its reserve back).
    """
    if finished:
        return FINISHED
    if stopped:
        return STOPPED
    if gone is None:
        return UNKNOWN
    return KILLED if gone else RUNNING


def _proc_stat(pid: int) -> tuple[str, float | None] | None:
    """(state letter, start time in seconds since the epoch) from Linux's /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        with open("/proc/stat", "rb") as f:
            boot = next(
                (
                    line.split()[1]
                    for line in f.read().decode("ascii", "replace").splitlines()
                    if line.startswith("btime ")
                ),
                None,
            )
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields:
        return None
    try:
        started = (
            int(boot) + int(fields[19]) / os.sysconf("SC_CLK_TCK") if boot is not None else None
        )
    except (IndexError, ValueError, OSError):
        started = None
    return fields[0], started

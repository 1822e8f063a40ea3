"""Notices the writer records about its own recording (docs/format.md): what could not
be recorded, or was recorded differently, and the preflight checks, each said once.

`preflight` looks at the process when the dump is enabled (and again at the first
function call, when a program may have changed its settings since): XLA
auto-clustering, ``tf.config.run_functions_eagerly``, a Keras mixed-precision policy,
the filters and the circular buffer, Python threads the op callback cannot see. Later
notices come from the op callback (a function compiled with XLA, a function traced
before enable, work in another thread).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from reader import format as fmt

# Threads this package starts itself (never the user's work).
OWN_THREAD_PREFIX = "tfdbg-tui-"


class NoticeBoard:
    """Writes each notice once per key.

    Args:
        writer: The run's `DumpWriter`.
    """

    def __init__(self, writer: Any) -> None:
        self._writer = writer
        self._seen: set[Any] = set()
        self._lock = threading.Lock()

    def once(
        self, key: Any, kind: str, message: str, *, level: str = fmt.NOTICE_WARNING, **details: Any
    ) -> bool:
        """Record a notice unless one with ``key`` was recorded; True when recorded."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
        self._writer.add_notice(kind, message, level=level, details=details)
        return True


def preflight(
    board: NoticeBoard,
    tf: Any,
    *,
    circular_buffer_size: int,
    op_regex: str | None,
    tensor_dtypes: list[str] | None,
    running_threads_seen: bool = False,
) -> None:
    """Record the notices about the process's settings at enable.

    ``running_threads_seen``: the op callback reaches threads already running
    (`instrument.tracing.threads`), so they need no notice.
    """
    _settings(board, tf)
    if op_regex is not None or tensor_dtypes is not None:
        parts = ([f"op_regex {op_regex!r}"] if op_regex is not None else []) + (
            [f"tensor_dtypes {', '.join(tensor_dtypes)}"] if tensor_dtypes is not None else []
        )
        board.once(
            fmt.NOTICE_FILTERS,
            fmt.NOTICE_FILTERS,
            f"only tensors that pass the filters are traced ({'; '.join(parts)}); "
            "executions of other ops are recorded without summaries",
            level=fmt.NOTICE_INFO,
            op_regex=op_regex,
            tensor_dtypes=tensor_dtypes,
        )
    if circular_buffer_size > 0:
        board.once(
            fmt.NOTICE_CIRCULAR_BUFFER,
            fmt.NOTICE_CIRCULAR_BUFFER,
            f"circular buffer of {circular_buffer_size:,}: the dump keeps the latest "
            f"{circular_buffer_size:,} executions and graph traces, and the first "
            "alert's window",
            level=fmt.NOTICE_INFO,
            size=circular_buffer_size,
        )
    current = threading.current_thread()
    others = sorted(
        t.name
        for t in threading.enumerate()
        if t is not current
        and t.is_alive()
        and not t.daemon
        and not t.name.startswith(OWN_THREAD_PREFIX)
    )
    if others and not running_threads_seen:
        board.once(
            fmt.NOTICE_THREADS_BEFORE_ENABLE,
            fmt.NOTICE_THREADS_BEFORE_ENABLE,
            f"{len(others)} Python thread(s) started before enable are not recorded "
            f"({', '.join(others[:5])}{', …' if len(others) > 5 else ''}); start "
            "TensorFlow threads after enable_dump_debug_info",
            threads=others,
        )


def recheck_settings(board: NoticeBoard) -> None:
    """At a function call: settings a program may have changed since enable."""
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        _settings(board, tf)


def _settings(board: NoticeBoard, tf: Any) -> None:
    jit = _auto_jit(tf)
    if jit:
        board.once(
            fmt.NOTICE_XLA_AUTO_CLUSTERING,
            fmt.NOTICE_XLA_AUTO_CLUSTERING,
            f"XLA auto-clustering is on ({jit}): TensorFlow compiles clusters of "
            "ops; the debugger's summary ops stay outside them, which can split "
            "clusters (slower steps, the same traces)",
            level=fmt.NOTICE_INFO,
            setting=jit,
        )
    try:
        eagerly = bool(tf.config.functions_run_eagerly())
    except AttributeError:
        eagerly = False
    if eagerly:
        board.once(
            fmt.NOTICE_FUNCTIONS_RUN_EAGERLY,
            fmt.NOTICE_FUNCTIONS_RUN_EAGERLY,
            "tf.config.run_functions_eagerly(True): tf.functions run op by op, so "
            "every op is an eager execution; there are no graph traces and no steps",
            level=fmt.NOTICE_INFO,
        )
    policy = _mixed_precision_policy()
    if policy is not None and policy != "float32":
        board.once(
            (fmt.NOTICE_MIXED_PRECISION, policy),
            fmt.NOTICE_MIXED_PRECISION,
            f"Keras mixed-precision policy {policy!r}: " + _policy_hazard(policy),
            level=fmt.NOTICE_INFO,
            policy=policy,
        )


def _policy_hazard(policy: str) -> str:
    """What is true of the dtype a mixed-precision policy computes in: float16's hazard
    is its range, bfloat16's its precision (it has float32's range)."""
    if "bfloat16" in policy:
        return (
            "layers compute in bfloat16, which has float32's range but 8 significant "
            "bits: values round (1 + 1e-3 is 1, so 1 - exp(-x) is 0 for small x), and a "
            "difference of close values can be an exact 0"
        )
    if "float16" in policy:
        return (
            "layers compute in float16, which overflows to inf past its largest value "
            "(65504) and rounds values below 6e-8 to 0"
        )
    return "layers compute in a narrower float than their variables"


def _auto_jit(tf: Any) -> str:
    try:
        setting = tf.config.optimizer.get_jit()
    except (AttributeError, RuntimeError):
        setting = ""
    if setting:
        return f"tf.config.optimizer.set_jit: {setting}"
    flags = os.environ.get("TF_XLA_FLAGS", "")
    for flag in flags.split():
        if flag.startswith("--tf_xla_auto_jit=") and flag.split("=", 1)[1] not in ("0", "-1"):
            return f"TF_XLA_FLAGS {flag}"
    return ""


def _mixed_precision_policy() -> str | None:
    """The global Keras policy's name, when Keras is already imported (never imports it)."""
    keras = sys.modules.get("keras")
    mixed = getattr(keras, "mixed_precision", None)
    try:
        policy = mixed.global_policy() if mixed is not None else None
    except (AttributeError, RuntimeError, ValueError):
        return None
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) else None

"""The proof of a fix: the culprit op rerun on its stored inputs, as it ran and with
the fixed line, in a fresh process (the repro script of `script`, run with ``--json``).

It needs the values (FULL_TENSOR) and TensorFlow where the proof runs; without either,
the proof is one line that says what would give it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from instrument.repro.script import ReproError, op_rerun, write_repro
from reader.analysis.diagnosis.culprit_values import CulpritValues

# Seconds the proof's process may take (TensorFlow's import is most of it).
PROOF_TIMEOUT = 120.0
_COUNTS = ("size", "nan", "neg_inf", "pos_inf")


@dataclass(frozen=True)
class Proof:
    """The culprit rerun as it was and fixed, or why it was not rerun.

    Attributes:
        op_type: The op rerun.
        call: Its call as the script writes it ("tf.math.log(x0)"), or None.
        fixed_line: The call with the fix applied, or None.
        original: The rerun's counts (``size``, ``nan``, ``neg_inf``, ``pos_inf``).
        fixed: The fixed line's counts.
        compiled: Whether both ran compiled with XLA, as the op did.
        missing: Why there is no proof (one line), or None.
    """

    op_type: str
    call: str | None = None
    fixed_line: str | None = None
    original: dict[str, int] | None = None
    fixed: dict[str, int] | None = None
    compiled: bool = False
    missing: str | None = None

    @property
    def holds(self) -> bool:
        """Whether the rerun made NaN or inf and the fixed line did not."""
        return (
            self.original is not None
            and self.fixed is not None
            and _nonfinite(self.original) > 0
            and _nonfinite(self.fixed) == 0
        )

    def text(self) -> str:
        """One line: "`tf.math.log(x0)`: -inf in 100 of 1000 -> `...`: all 1000 finite"."""
        if self.missing is not None or self.original is None or self.fixed is None:
            return f"not proven: {self.missing}"
        xla = " (compiled with XLA)" if self.compiled else ""
        if _nonfinite(self.original) == 0:
            return (
                f"not reproduced: `{self.call}` on the stored inputs made "
                f"{counts_text(self.original)}{xla}"
            )
        return (
            f"`{self.call}`: {counts_text(self.original)} -> "
            f"`{self.fixed_line}`: {counts_text(self.fixed)}{xla}"
        )

    def as_dict(self) -> dict[str, Any]:
        """``report --json``'s ``diagnosis.proof``."""
        return {
            "op_type": self.op_type,
            "call": self.call,
            "fixed_line": self.fixed_line,
            "original": self.original,
            "fixed": self.fixed,
            "compiled": self.compiled,
            "holds": self.holds,
            "text": self.text(),
            "missing": self.missing,
        }


def counts_text(counts: dict[str, int]) -> str:
    """ "-inf in 100 of 1000", or "all 1000 finite"."""
    parts = [
        f"{name} in {counts[key]}"
        for key, name in (("nan", "NaN"), ("neg_inf", "-inf"), ("pos_inf", "+inf"))
        if counts[key]
    ]
    if not parts:
        return f"all {counts['size']} finite"
    return f"{', '.join(parts)} of {counts['size']}"


def _nonfinite(counts: dict[str, int]) -> int:
    return counts["nan"] + counts["neg_inf"] + counts["pos_inf"]


def prove(values: CulpritValues, timeout: float = PROOF_TIMEOUT) -> Proof:
    """Rerun the culprit on its stored inputs, as it ran and fixed, in a fresh process."""
    try:
        op_rerun(values)
    except ReproError as error:
        return Proof(values.op_type, compiled=values.compiled, missing=str(error))
    if importlib.util.find_spec("tensorflow") is None:
        return Proof(
            values.op_type,
            compiled=values.compiled,
            missing="TensorFlow is not installed here; `tfdbg-tui repro` writes the "
            "script to run where it is",
        )
    with tempfile.TemporaryDirectory(prefix="tfdbg-proof-") as directory:
        try:
            files = write_repro(values, directory, about=f"proof of {values.op_type}")
        except (ReproError, OSError) as error:
            return Proof(values.op_type, compiled=values.compiled, missing=str(error))
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        try:
            done = subprocess.run(
                [sys.executable, files.script, "--json"],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=directory,
            )
        except subprocess.TimeoutExpired:
            return _failed(values, files.call, files.fixed_line, f"took over {timeout:g} s")
        result = _parsed(done.stdout) if done.returncode == 0 else None
        if result is None:
            lines = done.stderr.strip().splitlines()
            why = lines[-1] if lines else f"exit status {done.returncode}"
            return _failed(values, files.call, files.fixed_line, why)
    return Proof(
        values.op_type, files.call, files.fixed_line, result[0], result[1], values.compiled
    )


def _failed(values: CulpritValues, call: str, fixed_line: str, why: str) -> Proof:
    return Proof(
        values.op_type,
        call,
        fixed_line,
        compiled=values.compiled,
        missing=f"the rerun failed: {why}",
    )


def _parsed(stdout: str) -> tuple[dict[str, int], dict[str, int]] | None:
    """The script's ``--json`` line: its original and fixed counts, checked."""
    lines = stdout.strip().splitlines()
    try:
        found = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    pair = []
    for key in ("original", "fixed"):
        counts = found.get(key)
        if not isinstance(counts, dict) or not all(isinstance(counts.get(k), int) for k in _COUNTS):
            return None
        pair.append({k: int(counts[k]) for k in _COUNTS})
    return pair[0], pair[1]

"""The one-op reproduction: a self-contained script and the ``.npz`` of the stored
inputs it reruns the op on, as the program ran it and with the fixed line.

The script is built from our own text only: the op's call and its fixed form come from
`op_fixes.OP_FIXES` (an op type outside that table gets no script), the inputs' dtypes
are checked against `op_fixes.INPUT_DTYPES` and travel in the ``.npz`` as data, with
every other fact of the dump (the op's name, run and line, under ``about``). Nothing a
dump holds is ever written into the script as code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from instrument.repro.op_fixes import FLOAT_DTYPES, INPUT_DTYPES, OP_FIXES, OpFix
from reader.analysis.diagnosis.culprit_values import CulpritValues

SCRIPT_NAME = "repro.py"
INPUTS_NAME = "repro_inputs.npz"


class ReproError(Exception):
    """The culprit cannot be written as a one-op script (one line, for people)."""


@dataclass(frozen=True)
class ReproFiles:
    """What `write_repro` wrote: the script, the inputs, and the op's two lines."""

    script: str
    inputs: str
    call: str
    fixed_line: str


def op_fix(values: CulpritValues) -> OpFix:
    """The table's entry for the culprit's op, checked against its inputs.

    Raises:
        ReproError: No values, an op outside the table, or inputs it does not take.
    """
    if values.missing is not None:
        raise ReproError(values.missing)
    fix = OP_FIXES.get(values.op_type)
    if fix is None:
        known = ", ".join(sorted(OP_FIXES))
        raise ReproError(f"no one-op reproduction for {values.op_type} (it has: {known})")
    if len(values.inputs) != fix.arity:
        raise ReproError(
            f"{values.op_type} has {len(values.inputs)} inputs in the dump, "
            f"its reproduction takes {fix.arity}"
        )
    return fix


def write_repro(values: CulpritValues, directory: str, about: str) -> ReproFiles:
    """Write `SCRIPT_NAME` and `INPUTS_NAME` into ``directory`` (made if missing).

    Args:
        values: The culprit's stored values (`culprit_values`).
        directory: Where the two files go.
        about: Which op of which run, kept in the ``.npz`` (shown, never run).

    Raises:
        ReproError: The culprit has no script (`op_fix`), or an input's dtype is
            outside `op_fixes.INPUT_DTYPES`.
        OSError: The files cannot be written.
    """
    fix = op_fix(values)
    arrays: dict[str, np.ndarray] = {"about": np.array(about)}
    for i, tensor in enumerate(values.inputs):
        assert tensor.value is not None  # `values.missing` says otherwise
        dtype = tensor.dtype or tensor.value.dtype.name
        if dtype not in INPUT_DTYPES:
            raise ReproError(
                f"input {i} of {values.op_type} is {dtype}; a reproduction takes "
                f"{', '.join(INPUT_DTYPES)}"
            )
        stored = tensor.value
        if dtype == "bfloat16" or stored.dtype.kind not in "fiu":
            stored = stored.astype(np.float32)  # bfloat16 is stored as float32
        arrays[f"x{i}"] = np.ascontiguousarray(stored)
        arrays[f"dtype{i}"] = np.array(dtype)
    os.makedirs(directory, exist_ok=True)
    inputs = os.path.join(directory, INPUTS_NAME)
    np.savez(inputs, **arrays)  # type: ignore[arg-type]
    call, fixed_line = fix.line(fixed=False), fix.line(fixed=True)
    script = os.path.join(directory, SCRIPT_NAME)
    with open(script, "w", encoding="utf-8") as f:
        f.write(_script_text(fix, call, fixed_line, values.compiled))
    return ReproFiles(script, inputs, call, fixed_line)


def _script_text(fix: OpFix, call: str, fixed_line: str, compiled: bool) -> str:
    params = ", ".join(f"x{i}" for i in range(fix.arity))
    return _SCRIPT.format(
        script=SCRIPT_NAME,
        npz=INPUTS_NAME,
        arity=fix.arity,
        params=params,
        call=call,
        fixed=fixed_line,
        compiled=compiled,
        floats=FLOAT_DTYPES,
    )


# The script, as `str.format` fills it: only table text, names and numbers of ours.
_SCRIPT = '''\
"""Reproduce one op's NaN or infinity with TensorFlow alone, then run its fixed line.

Written by `tfdbg-tui repro`: the op runs on the inputs a dump recorded
({npz}, beside this script; its `about` says which op of which run).

    python {script}           the op as it ran: exits 1 while its output holds NaN or inf
    python {script} --fixed   the fixed line: exits 0 once its output is all finite
    python {script} --json    both, as one JSON object
"""

import json
import pathlib
import sys

import ml_dtypes
import numpy as np
import tensorflow as tf

STORED = np.load(pathlib.Path(__file__).with_name("{npz}"))
INPUTS = [
    tf.cast(tf.constant(STORED[f"x{{i}}"]), str(STORED[f"dtype{{i}}"])) for i in range({arity})
]
# The op ran inside an XLA-compiled function (jit_compile=True): so does its rerun.
COMPILED = {compiled}

_dtype = INPUTS[0].dtype if INPUTS[0].dtype.name in {floats} else tf.float32
_finfo = ml_dtypes.finfo(_dtype.as_numpy_dtype)
EPS = tf.constant(float(_finfo.eps), _dtype)
LOG_MAX = tf.constant(float(np.floor(np.log(float(_finfo.max)))), _dtype)
LOWEST = tf.constant(float(_finfo.min), _dtype)


def original({params}):
    return {call}


def fixed({params}):
    return {fixed}


def counts(output):
    values = np.asarray(tf.cast(output, tf.float64))
    return {{
        "size": int(values.size),
        "nan": int(np.isnan(values).sum()),
        "neg_inf": int(np.isneginf(values).sum()),
        "pos_inf": int(np.isposinf(values).sum()),
    }}


def said(found):
    parts = [
        f"{{name}} in {{found[key]}}"
        for key, name in (("nan", "NaN"), ("neg_inf", "-inf"), ("pos_inf", "+inf"))
        if found[key]
    ]
    if not parts:
        return f"all {{found['size']}} finite"
    return f"{{', '.join(parts)}} of {{found['size']}}"


def run(function):
    if COMPILED:
        function = tf.function(function, jit_compile=True)
    return counts(function(*INPUTS))


def main(args):
    if "--json" in args:
        print(json.dumps({{"original": run(original), "fixed": run(fixed)}}))
        return 0
    line, function = ("{fixed}", fixed) if "--fixed" in args else ("{call}", original)
    found = run(function)
    about = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(STORED["about"]))
    print(f"{{about}}\\n{{line}}: {{said(found)}}")
    return 0 if found["nan"] + found["neg_inf"] + found["pos_inf"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

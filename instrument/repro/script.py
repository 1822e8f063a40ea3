"""The one-op reproduction: a self-contained script and the ``.npz`` of the stored
inputs it reruns the op on, as the program ran it and with the fixed line.

The script is built from our own text only: the op's call comes from
`op_fixes.OP_CALLS` (an op type outside that table gets no script), its fixed form from
the fix table's computation for the op's family (`reader.analysis.diagnosis.fixes`:
`proof_fix`, written around the call by `fixed_call`, numbers of the table only), the
inputs' dtypes are checked against `op_fixes.INPUT_DTYPES` and travel in the ``.npz``
as data, with every other fact of the dump (the op's name, run and line, under
``about``). Nothing a dump holds is ever written into the script as code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from instrument.repro.op_fixes import INPUT_DTYPES, OP_CALLS
from reader.analysis.diagnosis.culprit_values import CulpritValues
from reader.analysis.diagnosis.fixes import OpCall, fixed_call, proof_fix

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


@dataclass(frozen=True)
class OpRerun:
    """The culprit's op as the script calls it, and its fixed line.

    Attributes:
        call: How the script calls the op (`op_fixes.OP_CALLS`).
        fixed_line: The call with the fix table's computation applied.
    """

    call: OpCall
    fixed_line: str


def op_rerun(values: CulpritValues) -> OpRerun:
    """The culprit's op call and fixed line, checked against its inputs.

    Raises:
        ReproError: No values, an op outside the table, inputs it does not take, or
            a family whose fix is no computation the script can run.
    """
    if values.missing is not None:
        raise ReproError(values.missing)
    call = OP_CALLS.get(values.op_type)
    if call is None:
        known = ", ".join(sorted(OP_CALLS))
        raise ReproError(f"no one-op reproduction for {values.op_type} (it has: {known})")
    if len(values.inputs) != call.arity:
        raise ReproError(
            f"{values.op_type} has {len(values.inputs)} inputs in the dump, "
            f"its reproduction takes {call.arity}"
        )
    fix = proof_fix(values.op_type, values.op_name)
    fixed_line = None if fix is None else fixed_call(fix, call)
    if fixed_line is None:
        raise ReproError(f"the fix for {values.op_type} is not one computation to rerun")
    return OpRerun(call, fixed_line)


def write_repro(values: CulpritValues, directory: str, about: str) -> ReproFiles:
    """Write `SCRIPT_NAME` and `INPUTS_NAME` into ``directory`` (made if missing).

    Args:
        values: The culprit's stored values (`culprit_values`).
        directory: Where the two files go.
        about: Which op of which run, kept in the ``.npz`` (shown, never run).

    Raises:
        ReproError: The culprit has no script (`op_rerun`), or an input's dtype is
            outside `op_fixes.INPUT_DTYPES`.
        OSError: The files cannot be written.
    """
    rerun = op_rerun(values)
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
    call, fixed_line = rerun.call.line(), rerun.fixed_line
    script = os.path.join(directory, SCRIPT_NAME)
    with open(script, "w", encoding="utf-8") as f:
        f.write(_script_text(rerun.call, call, fixed_line, values.compiled))
    return ReproFiles(script, inputs, call, fixed_line)


def _script_text(op: OpCall, call: str, fixed_line: str, compiled: bool) -> str:
    return _SCRIPT.format(
        script=SCRIPT_NAME,
        npz=INPUTS_NAME,
        arity=op.arity,
        params=", ".join(op.names),
        call=call,
        fixed=fixed_line,
        compiled=compiled,
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

import numpy as np
import tensorflow as tf

STORED = np.load(pathlib.Path(__file__).with_name("{npz}"))
INPUTS = [
    tf.cast(tf.constant(STORED[f"x{{i}}"]), str(STORED[f"dtype{{i}}"])) for i in range({arity})
]
# The op ran inside an XLA-compiled function (jit_compile=True): so does its rerun.
COMPILED = {compiled}


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

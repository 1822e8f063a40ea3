"""Instrument a TensorFlow 2 program so that it writes a tfdbg-tui dump:
`enable_dump_debug_info`, `disable_dump_debug_info`, `NonFiniteError`; importing it
does not import TensorFlow.

Usage, near the top of a training script::

    import instrument
    instrument.enable_dump_debug_info("/tmp/logdir", tensor_debug_mode="FULL_HEALTH",
                                      circular_buffer_size=-1)

Or, to leave it on for a whole job (no op instrumented; at the first harmful NaN the
step is replayed fully recorded)::

    instrument.watch("/tmp/logdir")

Importing this package does not import TensorFlow; enabling or watching does.
"""

from instrument.api import disable_dump_debug_info, enable_dump_debug_info
from instrument.non_finite import NonFiniteError
from instrument.watch import unwatch, watch

__all__ = [
    "enable_dump_debug_info",
    "disable_dump_debug_info",
    "NonFiniteError",
    "watch",
    "unwatch",
]

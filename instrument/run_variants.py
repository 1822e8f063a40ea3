"""The variants of `tfdbg-tui run --ab`, made inside the program's process: what `--ab`
changes (every `tf.function`'s `jit_compile`, Keras' dtype policy) and what the
program did that decides whether it applied.

``python -m instrument --xla off|on`` and ``--precision POLICY`` change the program
before it runs: every ``tf.function`` the program (or Keras) makes is built with XLA
off or on, or Keras' global dtype policy is set. What the program did that decides
whether a change applied (the functions that asked for XLA, the policy in force when
it ended) is recorded in `Observations`, for the run file the CLI reads.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

# Functions made by these packages keep their own XLA setting: TensorFlow's internal
# functions are not the program's, and ours must stay as they are.
_KEPT_MODULES = ("tensorflow.", "instrument.")


@dataclass
class Observations:
    """What the program did that an A/B variant depends on.

    Attributes:
        functions: tf.functions the program (or Keras) made.
        xla_functions: Their names, of those that asked for XLA (``jit_compile=True``).
        xla_forced: "on" or "off" when this process changed every function's setting.
        policy_set: The dtype policy this process set before the program ran, or None.
        final_policy: Keras' global dtype policy when the program ended, or None when
            the program never imported Keras.
    """

    functions: int = 0
    xla_functions: list[str] = field(default_factory=list)
    xla_forced: str | None = None
    policy_set: str | None = None
    final_policy: str | None = None

    def finish(self) -> None:
        """Record what outlives the program: the dtype policy in force."""
        import sys

        keras = sys.modules.get("keras")
        if keras is not None and hasattr(keras, "config"):
            try:
                self.final_policy = str(keras.config.dtype_policy().name)
            except (AttributeError, RuntimeError):
                self.final_policy = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "functions": self.functions,
            "xla_functions": self.xla_functions[:20],
            "num_xla_functions": len(self.xla_functions),
            "xla_forced": self.xla_forced,
            "policy_set": self.policy_set,
            "final_policy": self.final_policy,
        }


def watch_functions(observations: Observations, force: str | None = None) -> None:
    """Count the tf.functions the program makes and those that ask for XLA; with
    ``force`` ("on" or "off") build every one of them with ``jit_compile`` so."""
    import tensorflow as tf

    # The class behind `tf.function`, reached through the public API.
    function_class = type(tf.function(lambda: None))
    original = function_class.__init__
    signature = inspect.signature(original)
    observations.xla_forced = force

    def __init__(*args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs)
        python_function = bound.arguments.get("python_function")
        module = getattr(python_function, "__module__", None) or ""
        if not module.startswith(_KEPT_MODULES):
            observations.functions += 1
            if bound.arguments.get("jit_compile"):
                observations.xla_functions.append(str(bound.arguments.get("name")))
            if force is not None:
                bound.arguments["jit_compile"] = force == "on"
        original(*bound.args, **bound.kwargs)

    function_class.__init__ = __init__
    if force == "off":
        tf.config.optimizer.set_jit(False)


def set_policy(observations: Observations, policy: str) -> None:
    """Set Keras' global dtype policy (``mixed_float16``) before the program runs."""
    import keras

    keras.config.set_dtype_policy(policy)
    observations.policy_set = policy

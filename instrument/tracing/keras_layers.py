"""The Keras layer whose `call` is building the current op (its path), read from the
Python stack.

An op created inside a layer's call carries that layer's path (Keras 3's
``Layer.path``, ``"sequential/dense_1"``; the layer's ``name`` in Keras 2), which the
reader shows as the op's place in the model (`reader.analysis.hunt.model_place`). Name
scopes tell it only roughly: TensorFlow makes a scope unique within a graph by adding
``_1``, ``_2``... when a layer is called again in it.
"""

from __future__ import annotations

import re
import sys
from types import CodeType, FrameType

from reader.limits import MAX_LAYER_CHARS

# The files of the layer-call machinery (Keras 3; Keras 2 as `tf_keras` or `keras`).
_LAYER_CALL_FILE = re.compile(
    r"([\\/]keras[\\/]src[\\/]layers[\\/]layer\.py|"
    r"[\\/]tf_keras[\\/]src[\\/]engine[\\/]base_layer\.py|"
    r"[\\/]keras[\\/]engine[\\/]base_layer\.py)$"
)
# Deeper than this the stack is not searched (a layer's call is near the op).
MAX_FRAMES = 200
# A longer path is not kept (the reader's bound).
MAX_PATH_CHARS = MAX_LAYER_CHARS

_is_layer_call: dict[CodeType, bool] = {}


def calling_layer_path(frame: FrameType | None = None) -> str | None:
    """The path of the innermost Keras layer whose ``__call__`` is on the stack above
    ``frame`` (default: the caller's), or None outside a layer's call."""
    frame = sys._getframe(1) if frame is None else frame
    for _ in range(MAX_FRAMES):
        if frame is None:
            return None
        code = frame.f_code
        if code.co_name == "__call__":
            known = _is_layer_call.get(code)
            if known is None:
                known = _is_layer_call[code] = bool(_LAYER_CALL_FILE.search(code.co_filename))
            if known:
                return _path_of(frame.f_locals.get("self"))
        frame = frame.f_back
    return None


def _path_of(layer: object) -> str | None:
    path = getattr(layer, "path", None)
    if not isinstance(path, str) or not path:
        path = getattr(layer, "name", None)
    if not isinstance(path, str) or not path or len(path) > MAX_PATH_CHARS:
        return None
    return path

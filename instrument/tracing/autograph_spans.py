"""The user's expression for a frame of AutoGraph's generated code.

Inside a ``tf.function`` the user's code runs as AutoGraph's converted copy, from a
generated file: ``tf.math.log(probs)`` runs as
``ag__.converted_call(ag__.ld(tf).math.log, (ag__.ld(probs),), None, fscope)``.
TensorFlow's source map gives the user's line, not the columns. This module takes the
generated instruction's expression, undoes the conversion (`_Unconvert`), and finds
the expression of the same shape on the user's line, by comparing syntax trees, so
spacing and line breaks do not matter.

Runs once per new frame (frames are interned), never per op; both files are parsed
once and their trees cached.
"""

from __future__ import annotations

import ast
import threading

# (column, end line, end column) of the user's expression: UTF-8 byte offsets, as
# Python's code positions and `ast` give them (the caller converts to characters).
Span = tuple[int, int, int]

_AUTOGRAPH_MODULE = "ag__"


class _Unconvert(ast.NodeTransformer):
    """Rewrites AutoGraph's call and load wrappers back to what the user wrote."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = _autograph_function(node.func)
        if name == "converted_call" and len(node.args) >= 2 and isinstance(node.args[1], ast.Tuple):
            keywords = _keywords(node.args[2]) if len(node.args) >= 3 else []
            return ast.Call(func=node.args[0], args=list(node.args[1].elts), keywords=keywords)
        if name == "ld" and len(node.args) == 1:
            return node.args[0]
        if name == "ldu" and len(node.args) == 2 and isinstance(node.args[0], ast.Lambda):
            return node.args[0].body
        return node


def _keywords(node: ast.AST) -> list[ast.keyword]:
    """The keyword arguments AutoGraph passes to `converted_call`: ``dict(axis=1)`` (what
    it writes), or a ``{"axis": 1}`` literal; None (``None``) has none."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
    ):
        return list(node.keywords)
    keywords = []
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keywords.append(ast.keyword(arg=key.value, value=value))
            elif key is None:
                keywords.append(ast.keyword(arg=None, value=value))
    return keywords


def _autograph_function(func: ast.AST) -> str | None:
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == _AUTOGRAPH_MODULE
    ):
        return func.attr
    return None


def _shape(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)


class AutoGraphSpans:
    """Finds user expressions for generated-code positions; thread-safe, caching."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # user file path -> {line: [(shape, span), ...]} of every expression starting there
        self._user_index: dict[str, dict[int, list[tuple[str, Span]]]] = {}
        self._generated_lines: dict[str, list[str] | None] = {}

    def user_span(
        self,
        generated_path: str,
        generated_position: tuple[int, int, int, int],
        user_path: str,
        user_lines: list[str] | None,
        user_line: int,
    ) -> Span | None:
        """The span on ``user_line`` of the expression AutoGraph converted into the
        generated instruction at ``generated_position`` (line, end line, column, end
        column); None when it cannot be matched."""
        if not user_lines:
            return None
        with self._lock:
            generated = self._generated_text(generated_path, generated_position)
            if generated is None:
                return None
            try:
                tree = ast.parse(generated.strip(), mode="eval")
            except SyntaxError:
                return None
            wanted = _shape(_Unconvert().visit(tree).body)
            for shape, span in self._expressions(user_path, user_lines).get(user_line, ()):
                if shape == wanted:
                    return span
        return None

    def _generated_text(self, path: str, position: tuple[int, int, int, int]) -> str | None:
        if path not in self._generated_lines:
            try:
                with open(path, encoding="utf-8") as source:
                    self._generated_lines[path] = source.read().splitlines()
            except OSError:
                self._generated_lines[path] = None  # AutoGraph deleted it, or in memory
        lines = self._generated_lines[path]
        line, end_line, column, end_column = position
        if lines is None or not 1 <= line <= end_line <= len(lines):
            return None
        chunk = [text.encode("utf-8") for text in lines[line - 1 : end_line]]
        if line == end_line:
            return chunk[0][column:end_column].decode("utf-8", errors="replace")
        chunk[0] = chunk[0][column:]
        chunk[-1] = chunk[-1][:end_column]
        return "\n".join(part.decode("utf-8", errors="replace") for part in chunk)

    def _expressions(self, path: str, lines: list[str]) -> dict[int, list[tuple[str, Span]]]:
        index = self._user_index.get(path)
        if index is None:
            index = {}
            try:
                tree = ast.parse("\n".join(lines))
            except (SyntaxError, ValueError):
                tree = None
            for node in ast.walk(tree) if tree is not None else ():
                if (
                    isinstance(node, ast.expr)
                    and node.end_lineno is not None
                    and node.end_col_offset is not None
                ):
                    index.setdefault(node.lineno, []).append(
                        (_shape(node), (node.col_offset, node.end_lineno, node.end_col_offset))
                    )
            self._user_index[path] = index
        return index

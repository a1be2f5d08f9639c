"""Where an equation came from: the user's source line and the ``named_scope`` names around it.

Every equation a trace records carries a ``SourceInfo``: the innermost stack frame outside
hlox (and outside Python's standard library) at the moment the primitive was applied, and the
name stack (the ``named_scope`` / ``named_call`` names open then, relative to the jaxpr being
traced, with the transformations applied around them: ``jvp(foo)/bar``, as JAX's). Printed
jaxprs (``pretty_print(source_info=True)``), MLIR locations of the lowered module (and so
XLA's op metadata, dumps and profiles) and error messages read it.

Recording is cheap: the frame's code object and instruction offset are kept, and file, line
and column are worked out only when asked for. Interpreters that re-emit an equation (the
transpose of a linear equation, a batched or differentiated jaxpr's equations) run the rules
under ``current_eqn(eqn.source_info)``, so that what they emit points at the user's line of the
original equation, not at the line that called ``grad`` or ``vmap``.

The same record carries the XLA metadata (``set_xla_metadata``'s key/value pairs) in effect
when the equation was traced; the lowering attaches it to the equation's ops as
``mhlo.frontend_attributes``. Re-emitted equations keep theirs for the same reason they keep
their line, and it stays in effect for jaxprs a rule traces while re-emitting (the body of a
differentiated ``jit``).
"""
from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import threading

__all__ = ["SourceInfo", "NameStack", "Transform", "current", "transform_name_stack",
           "named_scope", "extend_name_stack", "current_eqn", "name_stack", "reset_name_stack",
           "is_user_file", "register_exclusion", "user_stacklevel", "xla_metadata",
           "current_xla_metadata",
           "merge_metadata"]

_hlox_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Python's own library: a frame there (contextlib, functools) is not the user's line.
_stdlib_dirs = tuple({os.path.abspath(p) + os.sep
                      for p in (sysconfig.get_paths().get("stdlib"),
                                sysconfig.get_paths().get("platstdlib")) if p})


# Paths (files or folders) that libraries built on hlox exclude from "user code", so that
# source locations skip their frames too (JAX's register_exclusion; filtered tracebacks
# have their own list, ``core.traceback_util._exclude_paths``).
_excluded: tuple[str, ...] = ()


def register_exclusion(path: str) -> None:
  """Treat frames whose file name starts with ``path`` as library frames, not user code."""
  global _excluded
  _excluded = (*_excluded, path)


def is_hlox_file(filename: str) -> bool:
  """Whether ``filename`` is one of hlox's own files."""
  return filename.startswith(_hlox_dir)


def is_user_file(filename: str) -> bool:
  """Whether a frame of ``filename`` counts as the user's code (not hlox, not the stdlib,
  not a path given to ``register_exclusion``; other site-packages count as user code: a
  library built on hlox is the user of hlox unless it says otherwise)."""
  if filename.startswith(_hlox_dir) or filename.startswith(_excluded):
    return False
  if filename.startswith(_stdlib_dirs) and "site-packages" not in filename:
    return False
  return True


def user_stacklevel() -> int:
  """The ``stacklevel`` that makes a ``warnings.warn`` in the caller of this function point
  at the user's line: the first frame out of hlox (and of Python's own library), however
  deep in hlox the warning is raised. Walks frames: call it only when about to warn."""
  level, frame = 1, sys._getframe(1)
  while frame is not None and not is_user_file(frame.f_code.co_filename):
    frame, level = frame.f_back, level + 1
  return level if frame is not None else 1


def merge_metadata(base: tuple, updates) -> tuple:
  """``base`` (sorted ``(key, value)`` pairs) updated with ``updates`` (pairs or a dict);
  a ``None`` value removes its key. Sorted pairs again, so equal metadata compares equal."""
  items = updates.items() if isinstance(updates, dict) else updates
  if not items:
    return base
  merged = dict(base)
  merged.update(items)
  return tuple(sorted((k, v) for k, v in merged.items() if v is not None))


class Transform(tuple):
  """A transformation's entry in a name stack (``jvp``, ``vmap``, ``transpose``): it wraps
  the scope opened after it, so ``(foo, jvp, bar)`` reads ``foo/jvp(bar)``. A one-element
  tuple: hashed and compared in C (name stacks key the lowering's caches), and never equal
  to the scope of the same name, which prints differently."""

  __slots__ = ()

  def __new__(cls, name: str):
    return tuple.__new__(cls, (name,))

  @property
  def name(self) -> str:
    return self[0]

  def __repr__(self):
    return f"Transform({self[0]!r})"


class NameStack(tuple):
  """The names an equation was traced under, outermost first: scope names (strings, from
  ``named_scope``/``named_call``/``jit``) and ``Transform`` entries. ``str`` gives the text
  JAX shows in op names: ``foo/vmap(jvp(bar))/baz``."""

  __slots__ = ()

  def __add__(self, other):
    return NameStack(tuple.__add__(self, tuple(other)))

  def __radd__(self, other):
    return NameStack(tuple.__add__(tuple(other), self))

  def __getitem__(self, index):
    got = tuple.__getitem__(self, index)
    return NameStack(got) if isinstance(index, slice) else got

  def extend(self, name: str) -> "NameStack":
    """This stack with scope ``name`` pushed."""
    return NameStack(tuple.__add__(self, (name,)))

  def transform(self, name: str) -> "NameStack":
    """This stack with transformation ``name`` pushed."""
    return NameStack(tuple.__add__(self, (Transform(name),)))

  @property
  def stack(self) -> tuple:
    return tuple(self)

  def __str__(self):
    # Right to left: a transformation wraps the text of the part after it.
    parts = []
    for entry in reversed(self):
      if type(entry) is Transform:
        if parts:
          parts[-1] = f"{entry[0]}({parts[-1]})"
        else:
          parts.append(f"{entry[0]}()")
      else:
        parts.append(entry)
    return "/".join(reversed(parts))

  def __repr__(self):
    return f"NameStack({str(self)!r})"


EMPTY = NameStack()


class SourceInfo:
  """A user source position (``file``, ``line``, ``column``, ``function``, computed lazily),
  the ``name_stack`` (a ``NameStack``) and the ``xla_metadata`` (sorted key/value
  pairs) of one equation."""

  __slots__ = ("code", "lasti", "name_stack", "xla_metadata", "_position")

  def __init__(self, code, lasti: int, name_stack: NameStack = EMPTY,
               xla_metadata: tuple = ()):
    self.code = code
    self.lasti = lasti
    self.name_stack = name_stack
    self.xla_metadata = xla_metadata
    self._position = None

  def _resolve(self):
    if self._position is None:
      line = col = None
      if self.code is not None:
        try:  # Python 3.11: one (line, end line, column, end column) per 2-byte code unit
          line, _, col, _ = list(self.code.co_positions())[self.lasti // 2]
        except (IndexError, ValueError):
          pass
        if line is None:
          line = self.code.co_firstlineno
      self._position = (line, col)
    return self._position

  @property
  def file(self) -> str | None:
    return None if self.code is None else self.code.co_filename

  @property
  def function(self) -> str | None:
    # The qualified name (``Outer.method.<locals>.inner``), as JAX shows functions.
    return None if self.code is None else self.code.co_qualname

  @property
  def line(self) -> int | None:
    return self._resolve()[0]

  @property
  def column(self) -> int | None:
    """0-based column of the expression, as Python reports it (None when unknown)."""
    return self._resolve()[1]

  def with_name_stack(self, name_stack: tuple) -> "SourceInfo":
    if name_stack == self.name_stack:
      return self
    info = SourceInfo(self.code, self.lasti, name_stack, self.xla_metadata)
    info._position = self._position
    return info

  def with_xla_metadata(self, xla_metadata: tuple) -> "SourceInfo":
    if xla_metadata == self.xla_metadata:
      return self
    info = SourceInfo(self.code, self.lasti, self.name_stack, xla_metadata)
    info._position = self._position
    return info

  def scope(self) -> str:
    """The name stack as JAX prints it: ``outer/jvp(inner)``."""
    return str(self.name_stack)

  def __str__(self):
    if self.code is None:
      return "unknown"
    line, col = self._resolve()
    if col:  # as JAX: the column is shown when it is not 0
      return f"{self.file}:{line}:{col} ({self.function})"
    return f"{self.file}:{line} ({self.function})"

  def __repr__(self):
    return f"SourceInfo({self}, name_stack={self.scope()!r})"

  def __bool__(self):
    return self.code is not None or bool(self.name_stack)


class _Context(threading.local):
  def __init__(self):
    self.name_stack = EMPTY
    self.eqn = None  # the SourceInfo of the equation being re-emitted, if any
    self.xla_metadata = ()  # the pairs ``set_xla_metadata`` blocks put in effect


_context = _Context()


def current() -> SourceInfo | None:
  """The SourceInfo for an equation recorded now: the innermost user frame (or the
  equation being re-emitted) and the open name stack."""
  ctx = _context
  eqn = ctx.eqn
  if eqn is not None:
    stack = ctx.name_stack
    info = eqn if not stack else eqn.with_name_stack(stack + eqn.name_stack)
    # The equation's own metadata wins over the blocks open around the re-emission.
    return info.with_xla_metadata(merge_metadata(ctx.xla_metadata, eqn.xla_metadata))
  frame = sys._getframe(1)
  while frame is not None:
    code = frame.f_code
    if is_user_file(code.co_filename):
      return SourceInfo(code, frame.f_lasti, ctx.name_stack, ctx.xla_metadata)
    frame = frame.f_back
  if ctx.name_stack or ctx.xla_metadata:
    return SourceInfo(None, 0, ctx.name_stack, ctx.xla_metadata)
  return None


def current_xla_metadata() -> tuple:
  """The XLA metadata an equation recorded now would carry (sorted key/value pairs); part
  of the key of every cache of traced jaxprs, since the equations record it."""
  ctx = _context
  eqn = ctx.eqn
  if eqn is not None and eqn.xla_metadata:
    return merge_metadata(ctx.xla_metadata, eqn.xla_metadata)
  return ctx.xla_metadata


class xla_metadata:
  """Context manager: equations recorded inside the block carry ``updates`` (a dict; a
  ``None`` value removes the key) merged over the metadata already in effect. ``replace=True``
  puts exactly ``updates`` in effect (the lowering of one equation)."""

  __slots__ = ("updates", "replace", "prev")

  def __init__(self, updates, replace: bool = False):
    self.updates = updates
    self.replace = replace

  def __enter__(self):
    ctx = _context
    self.prev = ctx.xla_metadata
    if self.replace:
      ctx.xla_metadata = tuple(self.updates)
    elif self.updates:
      ctx.xla_metadata = merge_metadata(self.prev, self.updates)
    return self

  def __exit__(self, *exc):
    _context.xla_metadata = self.prev


def name_stack() -> tuple:
  """The names of the ``named_scope`` blocks open now, outermost first."""
  return _context.name_stack


@contextlib.contextmanager
def extend_name_stack(name: str):
  """Push ``name`` onto the name stack inside the block."""
  ctx = _context
  prev = ctx.name_stack
  ctx.name_stack = prev.extend(name)
  try:
    yield
  finally:
    ctx.name_stack = prev


class transform_name_stack:
  """Context manager: equations recorded inside the block carry transformation ``name``
  (``jvp``, ``vmap``, ``transpose``) around the scopes opened inside it, as JAX's."""

  __slots__ = ("name", "prev")

  def __init__(self, name: str):
    self.name = name

  def __enter__(self):
    ctx = _context
    self.prev = ctx.name_stack
    ctx.name_stack = self.prev.transform(self.name)
    return self

  def __exit__(self, *exc):
    _context.name_stack = self.prev


@contextlib.contextmanager
def reset_name_stack():
  """An empty name stack inside the block: a traced function's equations record names
  relative to the jaxpr being traced, not to where it was called from."""
  ctx = _context
  prev = ctx.name_stack
  ctx.name_stack = EMPTY
  try:
    yield
  finally:
    ctx.name_stack = prev


@contextlib.contextmanager
def named_scope(name: str):
  """Context manager naming the equations traced inside its block.

  ``name`` is pushed on the name stack of every equation recorded in the block (nested scopes
  join with ``/``); it shows in ``pretty_print(name_stack=True)``, in the lowered module's
  locations, and so in XLA's op names, dumps and profiles. Values and transformations are
  unaffected; eager code runs as usual.

  Args:
    name: the scope's name; a non-string raises TypeError.

  Returns:
    A context manager (also usable as a decorator).

  Examples:
    >>> def f(x):
    ...   with hlox.named_scope("layer1"):
    ...     return jnp.sin(x) * 2
    >>> print(hlox.make_jaxpr(f)(1.).pretty_print(name_stack=True))
    { lambda ; a:f32[]. let
        b:f32[] = sin a           # [layer1]
        c:f32[] = mul b 2.0:f32[] # [layer1]
      in (c,) }

  See also:
    :func:`hlox.named_call`.
  """
  if not isinstance(name, str):
    raise TypeError("named_scope name argument must be a string.")
  with extend_name_stack(name):
    yield


class current_eqn:
  """Context manager: equations recorded inside the block take ``info``'s source line (the
  open name stack is prefixed to its names). ``None`` switches back to reading the stack."""

  __slots__ = ("info", "prev")

  def __init__(self, info: SourceInfo | None):
    self.info = info

  def __enter__(self):
    ctx = _context
    self.prev = ctx.eqn
    ctx.eqn = self.info
    return self

  def __exit__(self, *exc):
    _context.eqn = self.prev


# Frames of the machinery between a user's call of a NumPy-style operation and the operation's
# own checks: tracing, transformations, and the ufunc and array-method wrappers.
_MACHINERY = tuple(_hlox_dir + p for p in (
    "api.py", "autodiff.py", "custom_derivatives.py", "core" + os.sep, "interpreters" + os.sep,
    os.path.join("numpy", "util.py"), os.path.join("numpy", "ufuncs.py"),
    os.path.join("numpy", "array_methods.py")))


_LAX = (*_MACHINERY, _hlox_dir + "lax" + os.sep)


def lax_called_by_user() -> bool:
  """Whether the ``lax`` function running now was called by the user's code (directly or
  through another ``lax`` function) rather than by the rest of hlox. Walks frames: ask only
  on a slow path."""
  frame = sys._getframe(1)
  while frame is not None and frame.f_code.co_filename.startswith(_LAX):
    frame = frame.f_back
  return frame is None or is_user_file(frame.f_code.co_filename)


def called_by_user(depth: int = 1) -> bool:
  """Whether the operation running ``depth`` frames up was called by the user's code rather
  than by hlox's own implementation of another function (e.g. ``vander`` calling ``power``):
  the first frame outside the tracing and ufunc machinery is outside hlox. Options that police
  the user's code (``numpy_rank_promotion``, strict dtype promotion) ask this; JAX's own code
  never relies on what they forbid, and hlox's must not fail because of them. Costs a frame
  walk: ask only on the path where the option is about to warn or raise."""
  frame = sys._getframe(depth + 1)
  while frame is not None and frame.f_code.co_filename.startswith(_MACHINERY):
    frame = frame.f_back
  return frame is None or is_user_file(frame.f_code.co_filename)

"""The jaxpr IR: variables, equations, jaxprs, tracing to a jaxpr, printing, checking.

A jaxpr is a typed, first-order program in A-normal form::

    { lambda c:f32[3] ; a:f32[3]. let b:f32[3] = sin a; d:f32[3] = add b c in (d,) }

``constvars`` (before ``;``) are captured constants, ``invars`` the arguments; each equation
applies one primitive with static params. A ``ClosedJaxpr`` pairs a jaxpr with the values of its
constvars.
"""
from __future__ import annotations

import collections
import itertools
from typing import Any, Callable, Sequence

import numpy as np

from hlox.config import config
from hlox.errors import JaxprTypeError
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core import sharding_types
from hlox.core import vma as vma_lib
from hlox.core import source_info as source_info_lib
from hlox.core.tracer import (Trace, Tracer, eval_trace, get_aval, raise_for_invalid_operand,
                              set_current_trace)


class Var:
  """A variable of a jaxpr; it is its own identity (names are made up by the printer)."""

  # ``sharding``: how the value is split over a mesh's Explicit axes (a
  # ``sharding_types.TypeSharding``), None when it is not (``core/sharding_types.py``).
  # ``__weakref__``: the key-reuse checker keeps a weak set of the variables that hold keys
  # (``interpreters/key_reuse.py``).
  __slots__ = ("aval", "sharding", "__weakref__")

  def __init__(self, aval, sharding=None):
    if sharding_types.active[0]:
      typed = getattr(aval, "_sharding", None)
      if typed is not None:  # a type that records a split (a tracer's ``.aval``): keep it
        if sharding is None:
          sharding = sharding_types.split_of_named(typed, len(aval.shape))
        aval = aval.strip_sharding()
    self.aval = aval
    self.sharding = sharding

  def __repr__(self):
    return f"Var({type_string(self)})"


def type_string(v) -> str:
  """A variable's (or literal's) type as a printed jaxpr shows it: ``f32[8@X,4]``."""
  sharding = getattr(v, "sharding", None)
  if sharding is None:
    return v.aval.str_short()
  vma = getattr(v.aval, "_vma", ())
  return (f"{sharding_types.short(v.aval)}[{sharding_types.dims_string(v.aval.shape, sharding)}]"
          + sharding_types.partial_axes_str(sharding.mesh, vma, sharding.unreduced,
                                            sharding.reduced))


class Literal:
  """A constant written inline in an equation (``2.0:f32[]``): a scalar, or under
  ``use_simplified_jaxpr_constants`` a concrete array of any shape (``[...]:f32[3]``).

  ``wide``: a strongly typed 64-bit value (traced inside ``enable_x64()``). Where x64 is off
  its NumPy value would be read back as 32 bits, so evaluators read literals with
  ``literal_value``, which gives such a one as a device scalar of its own type."""

  __slots__ = ("val", "aval", "wide")

  def __init__(self, val, aval):
    self.val = val
    self.aval = aval
    dtype = aval.dtype
    self.wide = (dtype.itemsize >= 8 and dtype.kind in "fiuc" and not aval.weak_type
                 and not hasattr(val, "aval"))

  def __repr__(self):
    return f"Literal({self.val})"

  def pretty(self) -> str:
    if self.aval.shape:  # an array (``use_simplified_jaxpr_constants``): elided, as JAX's
      return f"[...]:{self.aval.str_short()}"
    if self.aval.dtype == dtypes.float0:
      value = 0
    else:
      value = self.aval.dtype.type(np.asarray(self.val) if hasattr(self.val, "aval") else
                                   self.val)
    if isinstance(value, np.ndarray):
      value = value.item()
    return f"{value}:{self.aval.str_short()}"


class JaxprEqn:
  """``outvars = primitive[params] invars``; ``source_info`` is the user's line, if known."""

  __slots__ = ("invars", "outvars", "primitive", "params", "source_info")

  def __init__(self, invars, outvars, primitive, params, source_info=None):
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.primitive = primitive
    self.params = params
    self.source_info = source_info

  @property
  def ctx(self) -> "EqnContext":
    """The context the equation was traced in (as JAX's ``eqn.ctx``): its XLA metadata."""
    return EqnContext(self.source_info)

  def replace(self, **kwargs) -> "JaxprEqn":
    fields = {k: getattr(self, k) for k in self.__slots__}
    fields.update(kwargs)
    return JaxprEqn(**fields)

  def __repr__(self):
    return pp_eqn(self, _Names(), 0)


class EqnContext:
  """What of the tracing context an equation keeps: ``xla_metadata``, a dict of the
  ``set_xla_metadata`` pairs in effect when it was traced (``None`` when there were none)."""

  __slots__ = ("xla_metadata",)

  def __init__(self, info):
    pairs = info.xla_metadata if info is not None else ()
    self.xla_metadata = dict(pairs) if pairs else None

  def __repr__(self):
    return f"EqnContext(xla_metadata={self.xla_metadata})"


class Jaxpr:
  __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info", "result_paths",
               "arg_names")

  def __init__(self, constvars, invars, outvars, eqns, debug_info=None, result_paths=None,
               arg_names=None):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self.debug_info = debug_info
    # Where each output sits in the traced function's result ("result", "result['a']"), or
    # a function computing that tuple, or None: a program lowered from this jaxpr names its
    # results by them (``jax.result_info``), as JAX's do.
    self.result_paths = result_paths
    # Each invar's path among the traced function's arguments ("x", "params['w']"; None
    # for a value that is not one), or None: a lowered program names its arguments by them.
    self.arg_names = arg_names

  @property
  def in_avals(self):
    return [v.aval for v in self.invars]

  @property
  def out_avals(self):
    return [v.aval for v in self.outvars]

  @property
  def _eqns(self):
    """The equation list itself (JAX's private spelling; code that edits a jaxpr in place,
    as JAX's tests do, writes through it)."""
    return self.eqns

  def __str__(self):
    return pp_toplevel_jaxpr(self)

  __repr__ = __str__

  def pretty_print(self, *, source_info: bool = False, name_stack: bool = False,
                   **kwargs) -> str:
    """The text form; ``source_info=True`` ends each equation's line with the user's
    source position, ``name_stack=True`` with its ``named_scope`` names (as JAX)."""
    return pp_jaxpr_annotated(self, source_info, name_stack)


class ClosedJaxpr:
  """A jaxpr together with the values of its constvars."""

  __slots__ = ("jaxpr", "consts", "_hash")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
    assert len(consts) == len(jaxpr.constvars)
    self.jaxpr = jaxpr
    self.consts = list(consts)
    self._hash = None

  @property
  def in_avals(self):
    return self.jaxpr.in_avals

  @property
  def out_avals(self):
    return self.jaxpr.out_avals

  @property
  def eqns(self):
    return self.jaxpr.eqns

  @property
  def invars(self):
    return self.jaxpr.invars

  @property
  def outvars(self):
    return self.jaxpr.outvars

  @property
  def constvars(self):
    return self.jaxpr.constvars

  @property
  def literals(self):
    return self.consts

  def __str__(self):
    return pp_toplevel_jaxpr(self.jaxpr)

  __repr__ = __str__

  def pretty_print(self, *, source_info: bool = False, name_stack: bool = False,
                   **kwargs) -> str:
    """As ``Jaxpr.pretty_print``."""
    return pp_jaxpr_annotated(self.jaxpr, source_info, name_stack)

  def _repr_html_(self):
    # Notebook display. The renderer lives in hlox.viz, above core, and is installed with
    # set_html_renderer when that package is imported; without it Jupyter shows the text.
    return _html_renderer(self) if _html_renderer is not None else None

  # Closed jaxprs are parameters of call primitives, so they must be hashable; identity is
  # the right notion (a jaxpr is never mutated after it is built).
  def __hash__(self):
    return id(self)

  def __eq__(self, other):
    return self is other


_html_renderer = None


def set_html_renderer(fn) -> None:
  """Make ``fn(closed_jaxpr) -> str`` the HTML that notebooks show for a ClosedJaxpr."""
  global _html_renderer
  _html_renderer = fn


# --- pretty printing ---------------------------------------------------------------------

class _Names:
  """Invents names a, b, ..., z, ba, bb, ... shared by a jaxpr and all jaxprs nested in it."""

  def __init__(self):
    self.names = {}
    self.counter = itertools.count()
    self.annotate = None  # eqn -> comment for its line (pretty_print's options), or None
    self.shared = {}  # id(jaxpr) -> its name: jaxprs printed once, above the top level
    # When a list: the top-level equations' places in the text, ``(line, start column, end
    # column, eqn)`` each (source maps of the printed text).
    self.positions = None

  def __call__(self, v) -> str:
    if isinstance(v, Literal):
      return v.pretty()
    name = self.names.get(v)
    if name is None:
      name = self.names[v] = _encode(next(self.counter))
    return name


def _encode(n: int) -> str:
  letters = "abcdefghijklmnopqrstuvwxyz"
  s = ""
  while True:
    s = letters[n % 26] + s
    n //= 26
    if n == 0:
      return s


def _binder(names, v, used=None) -> str:
  if used is not None and v not in used:
    return f"_:{type_string(v)}"  # as JAX prints a value nothing reads (a DropVar)
  return f"{names(v)}:{type_string(v)}"


def _suggest_names(names, for_vars, like_vars, skip=None):
  """Name ``for_vars`` (a nested jaxpr's binders) like ``like_vars`` (the equation's), as
  JAX prints the jaxpr of a ``jit`` equation. ``skip``: if given, only like_vars in it."""
  if len(for_vars) != len(like_vars):
    return
  taken = set()
  for f, l in zip(for_vars, like_vars):
    if (type(l) is Literal or type(f) is Literal or l in taken or f in names.names
        or (skip is not None and l not in skip)):
      continue
    taken.add(l)
    names.names[f] = names(l)


def _pp_param(value, names, indent, col=None) -> str:
  if isinstance(value, ClosedJaxpr):
    value = value.jaxpr
  if isinstance(value, Jaxpr):
    return names.shared.get(id(value)) or pp_jaxpr(value, names, indent, col)
  if isinstance(value, (tuple, list)) and any(isinstance(x, (Jaxpr, ClosedJaxpr))
                                              for x in value):
    inner = [x.jaxpr if isinstance(x, ClosedJaxpr) else x for x in value]
    inner = [names.shared.get(id(x)) or pp_jaxpr(x, names, indent + 2) for x in inner]
    flat = "(" + " ".join(inner) + ")"
    # As JAX's printer: on one line when every item does and the whole fits.
    if "\n" not in flat and (indent if col is None else col) + len(flat) <= _WIDTH:
      return flat
    pad = " " * (indent + 2)
    return "(\n" + "".join(f"{pad}{s}\n" for s in inner) + " " * indent + ")"
  if isinstance(value, frozenset):  # sorted, as JAX prints them
    try:
      return f"frozenset({{{', '.join(repr(e) for e in sorted(value))}}})"
    except TypeError:
      return str(value)
  if isinstance(value, np.dtype):
    return value.name
  if isinstance(value, type) and issubclass(value, np.generic):
    return np.dtype(value).name
  if callable(value) and hasattr(value, "__name__"):
    return value.__name__
  return str(value)


def pp_eqn(eqn: JaxprEqn, names, indent: int, used=None) -> str:
  text = _pp_eqn(eqn, names, indent, used)
  if names.annotate is not None:
    note = names.annotate(eqn)
    if note is not None:  # marked at the end of the equation's first line; aligned later
      first, nl, rest = text.partition("\n")
      text = f"{first}{_NOTE}{note}{nl}{rest}"
  return text


# primitive -> rule(eqn, names, binder) -> text: equations printed in a form of their own
# (a reference's ``c:f32[3] <- b[...]``); ``binder(v)`` prints a binder, ``binder.unused(v)``
# says whether nothing reads ``v``.
pp_rules: dict = {}


class _BinderPrinter:
  __slots__ = ("names", "used", "nested")

  def __init__(self, names, used, nested=False):
    self.names, self.used = names, used
    self.nested = nested  # inside another equation's jaxpr (JAX keeps its binders there)

  def __call__(self, v) -> str:
    return _binder(self.names, v, self.used)

  def unused(self, v) -> bool:
    return self.used is not None and v not in self.used


def _pp_eqn(eqn: JaxprEqn, names, indent: int, used=None) -> str:
  rule = pp_rules.get(eqn.primitive)
  if rule is not None:
    return rule(eqn, names, _BinderPrinter(names, used, indent > 4))
  params = eqn.primitive.params_for_printing(eqn.params)
  if eqn.primitive.name == "jit" and isinstance(params.get("jaxpr"), (Jaxpr, ClosedJaxpr)):
    inner = params["jaxpr"]
    inner = inner.jaxpr if isinstance(inner, ClosedJaxpr) else inner
    if id(inner) not in names.shared:
      _suggest_names(names, inner.invars, eqn.invars)
      _suggest_names(names, inner.outvars, eqn.outvars, skip=used)
  out_items = [_binder(names, v, used) for v in eqn.outvars]
  in_items = [names(v) for v in eqn.invars]
  ins = " ".join(in_items)
  outs = _fill(out_items, indent, indent + 2)[0] if out_items else "_"  # wrapped as JAX's
  # A nested jaxpr printed in place (not shared) puts the parameters one per line, unless
  # the whole equation fits on one line, which only a tiny jaxpr can.
  nested = [len(j.eqns) for j in _jaxprs_in(params) if id(j) not in names.shared]
  head = None
  if not params:
    head = eqn.primitive.name
  elif not nested or max(nested) <= 2:
    head = eqn.primitive.name + "[" + " ".join(
        f"{k}={_pp_param(v, names, indent)}" for k, v in params.items()) + "]"
    if "\n" in head or indent + len(outs) + 3 + len(head) > _WIDTH:  # one param per line
      head = None
  if head is None:
    pad = " " * (indent + 2)
    lines = [f"{pad}{k}={_pp_param(v, names, indent + 2, indent + 3 + len(k))}"
             for k, v in params.items()]
    head = eqn.primitive.name + "[\n" + "\n".join(lines) + "\n" + " " * indent + "]"
  text = f"{outs} = {head}" if eqn.outvars else head  # no results: the right side alone
  # JAX's printer puts a space before the operands even when there are none.
  _, last = text.rpartition("\n")[::2] if "\n" in text else ("", text)
  col = len(last) if "\n" in text else indent + len(text)
  return text + " " + _fill(in_items, col + 1, indent + 2)[0]


_WIDTH = 80  # JAX's printer breaks a parameter list that does not fit in 80 columns


def _fill(items, col: int, indent: int, sep: str = "") -> tuple[str, int]:
  """``items`` joined by ``sep`` and a space, starting at column ``col``, as JAX's printer
  fills a line: the space before an item becomes a new line (at ``indent``) once the line
  has reached 80 columns (JAX's printer checks that the space fits, not the item after it,
  so lines may pass 80). Returns the text and the column after it."""
  out = []
  pos = col
  last = len(items) - 1
  for k, item in enumerate(items):
    if k < last:
      item += sep
    if k:
      if pos + 1 > _WIDTH:
        out.append("\n" + " " * indent)
        pos = indent
      else:
        out.append(" ")
        pos += 1
    out.append(item)
    pos += len(item)
  return "".join(out), pos


def pp_jaxpr(jaxpr: Jaxpr, names: _Names | None = None, indent: int = 0,
             col: int | None = None) -> str:
  """JAX's text form of a jaxpr; ``indent`` is the indentation of the line holding the
  opening brace, ``col`` its column (default ``indent``)."""
  names = names or _Names()
  used = {v for e in jaxpr.eqns for v in e.invars if type(v) is not Literal}
  used.update(v for v in jaxpr.outvars if type(v) is not Literal)
  consts = [_binder(names, v) for v in jaxpr.constvars]
  args = [_binder(names, v) for v in jaxpr.invars]
  # Binders fill lines of 80 columns (continued 4 columns in), as JAX's printer does.
  head, pos = "{ lambda ", (indent if col is None else col) + 9
  if consts:
    text, pos = _fill(consts, pos, indent + 4)
    head += text
  head += "; "
  if args:
    head += _fill(args, pos + 2, indent + 4)[0]
  head += ". let"
  eqn_lines = [pp_eqn(e, names, indent + 4, used) for e in jaxpr.eqns]
  close = (",)" if len(jaxpr.outvars) == 1 else ")") + " }"
  outs = _fill([names(v) for v in jaxpr.outvars], indent + 6, indent + 4, sep=",")[0]
  tail = f"in ({outs}{close}"
  one_line = f"{head} {'; '.join(eqn_lines)} {tail}"
  # JAX's printer keeps the jaxpr on one line when it fits in 80 columns.
  fits = ("\n" not in one_line and len(one_line) + (indent if col is None else col) <= _WIDTH
          and names.annotate is None)
  if names.positions is not None and indent == 0 and col is None:
    _record_positions(names.positions, jaxpr.eqns, eqn_lines, head, fits)
  if fits:
    return one_line
  body = "".join(f"\n{' ' * (indent + 4)}{line}" for line in eqn_lines)
  return f"{head}{body}\n{' ' * (indent + 2)}{tail}"


def _jaxprs_in(params):
  """The jaxprs among the values of ``params`` (directly or in a tuple or list)."""
  for value in params.values():
    for x in value if isinstance(value, (tuple, list)) else (value,):
      if isinstance(x, ClosedJaxpr):
        yield x.jaxpr
      elif isinstance(x, Jaxpr):
        yield x


def _shared_jaxprs(top: Jaxpr) -> list:
  """``[(name, jaxpr)]``: the nested jaxprs JAX's printer shows once, above the top-level
  jaxpr, as ``let name = {...} in``: those used more than once and those of more than 10
  equations. A jaxpr is named after the ``name`` parameter of the equation that holds it
  (``<lambda>`` as ``lambda``), else ``jaxpr``; repeated names get a number."""
  counts: dict = {}  # id -> [jaxpr, uses]; big jaxprs count twice
  names: dict = {}
  queue = collections.deque([top])
  while queue:
    jaxpr = queue.popleft()
    entry = counts.setdefault(id(jaxpr), [jaxpr, 0])
    entry[1] += 1
    if jaxpr is not top and len(jaxpr.eqns) > 10:
      entry[1] += 1
    for eqn in jaxpr.eqns:
      subs = list(_jaxprs_in(eqn.primitive.params_for_printing(eqn.params)))
      queue.extend(subs)
      name = eqn.params.get("name")
      if isinstance(name, str):
        for sub in subs:
          names.setdefault(id(sub), name.strip("<>"))
  taken: dict = collections.Counter()
  shared = []
  for key, (jaxpr, uses) in counts.items():
    if uses == 1:
      continue
    name = names.get(key, "jaxpr")
    if taken[name]:
      seen = taken[name]
      taken[name] += 1
      name += str(seen)
    taken[name] += 1
    shared.append((name, jaxpr))
  return shared


def pp_toplevel_jaxpr(jaxpr: Jaxpr, names: _Names | None = None) -> str:
  """JAX's text of a whole jaxpr: the shared nested jaxprs first (``let name = {...} in``,
  see ``_shared_jaxprs``), then the jaxpr, all naming variables in one sequence."""
  names = names or _Names()
  shared = _shared_jaxprs(jaxpr)
  parts = []
  for name, sub in shared:
    parts.append(f"let {name} = {pp_jaxpr(sub, names, 0, len(name) + 7)} in\n")
    names.shared[id(sub)] = name
  return "".join(parts) + pp_jaxpr(jaxpr, names)


def _record_positions(positions, eqns, eqn_lines, head, one_line: bool) -> None:
  # Where each top-level equation's text starts and ends (on its first line), in the
  # layout ``pp_jaxpr`` picked: after the head, separated by "; ", or one per line.
  line, start = (0, len(head) + 1) if one_line else (head.count("\n") + 1, 4)
  for eqn, text in zip(eqns, eqn_lines):
    first = text.split("\n", 1)[0]
    positions.append((line, start, start + len(first), eqn))
    if one_line:
      start += len(text) + 2
    else:
      line += text.count("\n") + 1


def pp_jaxpr_with_positions(jaxpr: Jaxpr) -> tuple[str, list]:
  """``pp_jaxpr``'s text and the place of each top-level equation in it: ``(line, start
  column, end column, eqn)``."""
  names = _Names()
  names.positions = []
  return pp_jaxpr(jaxpr, names), names.positions


_NOTE = "\x00"  # separates a line from its annotation until the annotations are aligned


def pp_jaxpr_annotated(jaxpr: Jaxpr, source_info: bool = False,
                       name_stack: bool = False) -> str:
  """``pp_jaxpr`` with each equation's source position and/or name stack as a comment
  at the end of its line, the comments aligned in one column."""
  if not (source_info or name_stack):
    return pp_toplevel_jaxpr(jaxpr)

  def annotate(eqn):
    info = eqn.source_info
    parts = []
    if source_info:
      parts.append(str(info) if info else "unknown")
    if name_stack:
      parts.append(f"[{info.scope() if info else ''}]")
    return " ".join(parts)

  names = _Names()
  names.annotate = annotate
  lines = pp_toplevel_jaxpr(jaxpr, names).split("\n")
  width = max((len(line.partition(_NOTE)[0]) for line in lines if _NOTE in line), default=0)
  out = []
  for line in lines:
    code, mark, note = line.partition(_NOTE)
    out.append(f"{code.ljust(width)} # {note}" if mark else line)
  return "\n".join(out)


# --- evaluation, checking, DCE -----------------------------------------------------------

def subjaxprs(params):
  """The jaxprs among an equation's parameters (bodies of loops, branches, calls)."""
  for v in params.values():
    for item in (v if isinstance(v, (tuple, list)) else (v,)):
      if isinstance(item, ClosedJaxpr):
        yield item.jaxpr
      elif isinstance(item, Jaxpr):
        yield item


# Set by the runtime (``register_exact_scalar``): (NumPy scalar, aval) -> a device scalar of
# exactly ``aval``'s dtype, 64-bit ones included while x64 is off.
_exact_scalar: list = [None]


def register_exact_scalar(fn) -> None:
  _exact_scalar[0] = fn


def literal_value(v: Literal):
  """The value to evaluate literal ``v`` with: its own, or for a 64-bit one read while x64
  is off, a device scalar that keeps the 64-bit type the jaxpr was traced with."""
  if v.wide and not config._values["enable_x64"] and _exact_scalar[0] is not None:
    return _exact_scalar[0](v.val, v.aval)
  return v.val


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args) -> list:
  """Run ``jaxpr`` by binding each equation's primitive on the current trace."""
  env = {}

  def read(v):
    if type(v) is Literal:
      return v.val if not v.wide else literal_value(v)
    return env[v]

  if len(args) != len(jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  # Equations the binds record (under an outer trace) keep each equation's source line.
  context = source_info_lib._context
  prev_eqn = context.eqn
  try:
    for eqn in jaxpr.eqns:
      invals = [read(v) for v in eqn.invars]
      context.eqn = eqn.source_info
      outs = eqn.primitive.bind(*invals, **eqn.params)
      if eqn.primitive.multiple_results:
        env.update(zip(eqn.outvars, outs))
      else:
        env[eqn.outvars[0]] = outs
  finally:
    context.eqn = prev_eqn
  return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable:
  return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _typematch(a, b) -> bool:
  if a is b:  # avals are interned (and the token type is one object)
    return True
  return type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype


# primitive -> ``rule(in_avals, **params)``: checks made before the abstract evaluation in
# ``check_jaxpr``, raising JaxprTypeError for an ill-typed equation that the abstract
# evaluation would reject with a less specific error (a call with the wrong operands).
typecheck_rules: dict = {}


def check_call_operands(prim_name: str, in_avals, callee) -> None:
  """JaxprTypeError unless ``in_avals`` can be passed to the jaxpr ``callee`` (a call
  primitive's typecheck rule)."""
  callee = callee.jaxpr if isinstance(callee, ClosedJaxpr) else callee
  if len(in_avals) != len(callee.invars):
    raise JaxprTypeError(f"Call primitive {prim_name} with {len(in_avals)} operands cannot "
                         f"call jaxpr with {len(callee.invars)} inputs")
  for a, v in zip(in_avals, callee.invars):
    b = v.aval
    if (hasattr(a, "shape") and hasattr(b, "shape")
        and (a.shape != b.shape or a.dtype != b.dtype)):
      raise JaxprTypeError(f"Call primitive {prim_name} passes operand of type "
                           f"{a.str_short()} to jaxpr expecting type {b.str_short()}")


def check_jaxpr(jaxpr: Jaxpr) -> None:
  """Typecheck ``jaxpr`` (and nested jaxprs): every variable defined once before use, every
  equation's output types equal to its primitive's abstract evaluation."""
  defined = set()

  def define(v, where):
    if v in defined:
      raise JaxprTypeError(f"variable {v} defined twice ({where})")
    defined.add(v)

  def use(v, where):
    if type(v) is Literal:
      return v.aval
    if v not in defined:
      raise JaxprTypeError(f"variable {v} used before definition in {where}")
    return v.aval

  for v in jaxpr.constvars:
    define(v, "constvars")
  for v in jaxpr.invars:
    define(v, "invars")
  for i, eqn in enumerate(jaxpr.eqns):
    where = f"equation {i} ({eqn.primitive.name})"
    in_avals = [use(v, where) for v in eqn.invars]
    for p in eqn.params.values():
      for sub in (p if isinstance(p, (tuple, list)) else (p,)):
        if isinstance(sub, ClosedJaxpr):
          check_jaxpr(sub.jaxpr)
        elif isinstance(sub, Jaxpr):
          check_jaxpr(sub)
    typecheck = typecheck_rules.get(eqn.primitive)
    if typecheck is not None:
      typecheck(in_avals, **eqn.params)
    out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
    out_avals = list(out) if eqn.primitive.multiple_results else [out]
    if len(out_avals) != len(eqn.outvars):
      raise JaxprTypeError(f"{where}: {len(eqn.outvars)} outputs, rule gives {len(out_avals)}")
    for v, a in zip(eqn.outvars, out_avals):
      if not _typematch(v.aval, a):
        raise JaxprTypeError(_binder_mismatch(jaxpr, eqn, v, a))
      define(v, where)
  for v in jaxpr.outvars:
    use(v, "outvars")


def _binder_mismatch(jaxpr: Jaxpr, eqn: JaxprEqn, v: Var, rule_aval) -> str:
  """JAX's message for an equation whose output variable's type is not the type its
  primitive's rule gives, naming variables as the printed ``jaxpr`` does."""
  names = _Names()
  text = pp_jaxpr(jaxpr, names)  # names every variable as the printed jaxpr shows it
  return (f"Value for variable '{names(v)}' inconsistently typed as {rule_aval.str_short()} "
          f"for let-binder of type {v.aval.str_short()}\n\nin equation:\n\n"
          f"{pp_eqn(eqn, names, 0)}\n\nwhile checking jaxpr:\n\n{text}")


effectful_primitives: set = set()  # primitives DCE must keep even when their outputs are unused
# Primitives effectful for some parameters only: primitive -> ``predicate(params)`` (an FFI
# call declared with ``has_side_effect=True``).
effectful_when: dict = {}


# Primitives with an effect on the world outside the program (``io_callback``): as with
# JAX's IO effect, transformations that would change how often they run, or on which values,
# refuse them (vmap of a cond or while_loop with a batched predicate, AD of a checkpoint).
io_effect_primitives: set = set()


def io_effect_names(jaxpr) -> list:
  """The names of the IO-effect primitives ``jaxpr`` (a Jaxpr or ClosedJaxpr) binds, itself
  or in a jaxpr inside it (a loop's body, a branch, a call)."""
  jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
  found = []
  for eqn in jaxpr.eqns:
    if eqn.primitive in io_effect_primitives:
      found.append(eqn.primitive.name)
    for sub in subjaxprs(eqn.params):
      found += io_effect_names(sub)
  return found


def is_effectful(eqn) -> bool:
  """Whether ``eqn`` must run even when its outputs are unused."""
  if eqn.primitive in effectful_primitives:
    return True
  predicate = effectful_when.get(eqn.primitive)
  return predicate is not None and predicate(eqn.params)


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None,
              prune_invars: bool = False) -> tuple[Jaxpr, list[bool]]:
  """Drop equations whose outputs are unused. Returns the new jaxpr and which invars it uses
  (when ``prune_invars``, unused invars are also removed)."""
  if used_outputs is None:
    used_outputs = [True] * len(jaxpr.outvars)
  outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  live = {v for v in outvars if type(v) is not Literal}
  kept = []
  for eqn in reversed(jaxpr.eqns):
    if any(v in live for v in eqn.outvars) or is_effectful(eqn):
      kept.append(eqn)
      live.update(v for v in eqn.invars if type(v) is not Literal)
  kept.reverse()
  used_inputs = [v in live for v in jaxpr.invars]
  invars = [v for v, u in zip(jaxpr.invars, used_inputs) if u] if prune_invars else jaxpr.invars
  constvars = [v for v in jaxpr.constvars if v in live] if prune_invars else jaxpr.constvars
  return Jaxpr(constvars, invars, outvars, kept, jaxpr.debug_info), used_inputs


# --- tracing Python to a jaxpr -----------------------------------------------------------

_options = config._values  # read directly per traced equation (config's getattr is slower)

class DynamicJaxprTracer(Tracer):
  """A value being traced into a jaxpr (JAX's class of that name: code prints it, e.g. the
  repr of a sparse array under ``jit`` is ``DynamicJaxprTracer[BCOO(...)]``)."""
  __slots__ = ("_aval", "_var", "_src")

  def __init__(self, trace, aval, var, src=None):
    self._trace = trace
    if sharding_types.active[0] and getattr(aval, "_sharding", None) is not None:
      aval = aval.strip_sharding()  # the split lives on ``var`` (the typed view below)
    self._aval = aval
    self._var = var
    self._src = src

  @property
  def aval(self):
    """The value's type; for a value split over Explicit mesh axes it records the split
    (``x.aval.sharding.spec``), as JAX's types do. Tracing itself works with the plain
    type (``_aval``) and keeps the split on the variable."""
    split = getattr(self._var, "sharding", None)
    if split is None:
      return self._aval
    return self._aval.update(sharding=sharding_types.named_of_split(split))

  @property
  def type_sharding(self):
    """How this value is split over Explicit mesh axes (``core/sharding_types.py``)."""
    return getattr(self._var, "sharding", None)

  def _short_repr(self) -> str:
    return f"JitTracer({self.aval})"

  def _origin_msg(self) -> str:
    """JAX's account of where a traced value came from: the traced function and the
    arguments this value depends on, or else the operations that made it a tracer."""
    trace = self._trace
    origin = getattr(trace, "origin", None)
    if origin is None:
      return ""
    src, traced_for, arg_names = origin
    text = f"\nThe error occurred while tracing the function {src} for {traced_for}. "
    positions, roots = _progenitors(trace, self._var)
    if positions:
      names = [arg_names[i] if i < len(arg_names) else "unknown" for i in positions]
      if len(names) == 1:
        which = f"the argument {names[0]}"
      elif len(names) == 2:
        which = f"the arguments {names[0]} and {names[1]}"
      else:
        which = f"the arguments {', '.join(names[:-1])}, and {names[-1]}"
      text += ("This concrete value was not available in Python because it depends on the "
               f"value{'s' if len(names) > 1 else ''} of {which}.")
    elif roots:
      names = _Names()
      ops = [f"  operation {_pp_eqn(e, names, 0)}\n    from line {e.source_info}"
             for e in roots[:5]]
      text += ("This value became a tracer due to JAX operations on these lines:\n\n" +
               "\n\n".join(ops))
      if len(roots) > 5:
        text += "\n\n(Additional originating lines are not shown.)"
    return text


JaxprTracer = DynamicJaxprTracer  # hlox's earlier name


class JaxprTrace(Trace):
  """Records every primitive applied to its tracers as an equation.

  Values from outside (concrete arrays, or tracers of enclosing transformations) become
  constvars; host scalars (Python and NumPy numbers, 0-d NumPy arrays) become literals. As
  JAX's, a device array stays a constvar even when 0-d: it is a value the program reads.
  """

  kind = "DynamicJaxprTrace"  # JAX's name for the trace that stages out a jaxpr

  name = "jit"
  origin = None  # (function, traced for, argument names) when known, for error messages

  def __init__(self, debug_info: str = "", name: str | None = None):
    super().__init__()
    self.debug_info = debug_info
    if name:
      self.name = name
    self.invars = []
    self.eqns = []
    self.constvars = []
    self.consts = []
    self._const_tracers = {}  # id(value) -> (tracer, value): keeps value alive so ids stay valid

  def invalidate(self):
    # Its constants' tracers refer back to the trace: a reference cycle that would keep
    # the finished trace (and what it holds) alive until the next garbage collection.
    self._const_tracers = {}
    super().invalidate()

  def new_arg(self, aval, sharding=None) -> JaxprTracer:
    var = Var(aval, sharding)
    self.invars.append(var)
    return JaxprTracer(self, aval, var)

  def to_tracer(self, x) -> JaxprTracer:
    if type(x) is JaxprTracer and x._trace is self:
      return x
    entry = self._const_tracers.get(id(x))
    if entry is not None:
      return entry[0]
    if isinstance(x, Tracer):
      self.check_tracer(x)
      var = Var(x.aval, getattr(x, "type_sharding", None))
      self.constvars.append(var)
      self.consts.append(x)
      tracer = JaxprTracer(self, x.aval, var)
    else:
      aval = get_aval(x)
      if isinstance(x, _HOST_SCALARS) and aval.shape == ():
        tracer = JaxprTracer(self, aval, Literal(_literal_value(x, aval), aval))
      elif _options["use_simplified_jaxpr_constants"] and self._array_literal(x, aval):
        tracer = JaxprTracer(self, aval, Literal(x if hasattr(x, "aval") else
                                                 _literal_value(x, aval), aval))
      else:  # as JAX's; a placeholder too becomes a constant of its type (tracing needs no value)
        var = Var(aval, sharding_types.value_split(x) if sharding_types.active[0] else None)
        self.constvars.append(var)
        self.consts.append(x)
        tracer = JaxprTracer(self, aval, var)
    self._const_tracers[id(x)] = (tracer, x)
    return tracer

  # Under ``use_simplified_jaxpr_constants``, whether device arrays become literals too
  # (JAX's ``for_ad``: a trace that makes residuals keeps them as constvars).
  literal_device_arrays = True

  def _array_literal(self, x, aval) -> bool:
    """Whether concrete ``x`` of any shape is a literal (``use_simplified_jaxpr_constants``):
    a NumPy array, or a device array where ``literal_device_arrays``."""
    if isinstance(x, np.ndarray):
      return x.dtype.kind in "biufc" and type(aval) is ShapedArray
    return (self.literal_device_arrays and type(x) in device_array_types
            and type(aval) is ShapedArray and not dtypes.is_extended(aval.dtype))

  def process_primitive(self, primitive, args, params):
    if _options["eager_constant_folding"] and not any(isinstance(x, Tracer) for x in args):
      # Inside ``ensure_compile_time_eval``: what does not depend on a traced value is
      # computed now, at trace time, and enters the jaxpr as a constant.
      with set_current_trace(eval_trace):
        return primitive.bind(*args, **params)
    try:
      tracers = [self.to_tracer(x) for x in args]
    except TypeError:  # an operand that is no JAX value: JAX's message naming its position
      raise_for_invalid_operand(primitive.name, args)
      raise
    forward = forwarding_rules.get(primitive)
    if forward is not None:
      i = forward([t._aval for t in tracers], **params)
      if i is not None:  # the result is that operand itself: no equation
        return tracers[i]
    fold = const_fold_rules.get(primitive)
    if fold is not None and all(type(t._var) is Literal for t in tracers):
      out = fold([t._var.val for t in tracers], [t._aval for t in tracers], **params)
      if out is not None:  # computed on the host now: a literal, no equation
        value, aval = out
        return JaxprTracer(self, aval, Literal(_literal_value(value, aval), aval))
    if vma_lib.active[0]:  # inside a check_vma shard_map body (``core/vma.py``)
      return vma_lib.process(self, primitive, tracers, params, self._record)
    return self._record(primitive, tracers, params)

  def _record(self, primitive, tracers, params):
    in_avals = [t._aval for t in tracers]
    out = primitive.abstract_eval(*in_avals, **params)
    if isinstance(out, (tuple, list)) != primitive.multiple_results:  # a user's rule
      raise ValueError(f"{primitive}.abstract_eval() method should return a tuple or a list "
                       f"iff {primitive}.multiple_results.")
    src = source_info_lib.current()
    out_avals = out if primitive.multiple_results else [out]
    in_shardings = [getattr(t._var, "sharding", None) for t in tracers] if \
        sharding_types.active[0] else ()
    if sharding_types.active[0] and (any(s is not None for s in in_shardings)
                                     or primitive in sharding_types.sources):
      shardings = sharding_types.output_shardings(primitive, in_avals, in_shardings,
                                                  out_avals, params)
      outs = [JaxprTracer(self, a, Var(a, s), src) for a, s in zip(out_avals, shardings)]
    else:
      outs = [JaxprTracer(self, a, Var(a), src) for a in out_avals]
    self.eqns.append(JaxprEqn([t._var for t in tracers], [t._var for t in outs], primitive,
                              params, src))
    return outs if primitive.multiple_results else outs[0]

  def to_jaxpr(self, out_tracers) -> tuple[Jaxpr, list]:
    outvars = [t._var for t in out_tracers]
    jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns, self.debug_info)
    return jaxpr, list(self.consts)


def _progenitors(trace, var) -> tuple[list, list]:
  """The positions of the trace's arguments that ``var`` depends on, and the equations it
  depends on that read no traced value (their operands are all constants)."""
  needed = {var}
  roots = []
  for eqn in reversed(trace.eqns):
    if not any(v in needed for v in eqn.outvars):
      continue
    ins = [v for v in eqn.invars if type(v) is not Literal]
    needed.update(ins)
    roots.append(eqn)
  made = {v for e in trace.eqns for v in e.outvars}
  positions = [i for i, v in enumerate(trace.invars) if v in needed]
  roots = [e for e in reversed(roots)
           if not any(type(v) is not Literal and (v in made or v in trace.invars)
                      for v in e.invars)]
  return positions, roots


# primitive -> rule(operand avals, **params) giving the position of the operand that is
# the result (an identity application: a broadcast to the operand's own shape), or None.
# As JAX's, a traced jaxpr then records no equation for it, whatever the operand is (a
# constant included).
forwarding_rules: dict = {}

# primitive -> rule(operand values, operand avals, **params) giving ``(value, aval)`` of the
# result computed on the host, or None. Applied (as JAX's ``const_fold_rules``) when every
# operand is a literal: the result is a literal too.
const_fold_rules: dict = {}

_HOST_SCALARS = (int, float, complex, bool, np.generic, np.ndarray)
# The runtime's concrete array type(s), registered by the runtime (core knows no device).
device_array_types: set = set()


def _literal_value(x, aval):
  if type(x) in (int, float, complex, bool):
    return x
  value = np.asarray(x, dtype=aval.dtype)[()]
  if aval.weak_type:
    # A weakly typed value is kept as the Python scalar of that dtype, so that evaluating
    # the jaxpr (eval_jaxpr, transposition) sees a weakly typed operand again.
    py = value.item()
    if type(py) in (int, float, complex) and dtypes.python_scalar_dtype(py) == aval.dtype:
      return py
  return value


def trace_to_jaxpr(fun: Callable, in_avals: Sequence[ShapedArray], debug_info: str = "",
                   trace_name: str = "jit", in_shardings=None, origin=None) -> ClosedJaxpr:
  """Trace ``fun(*flat_tracers) -> flat outputs`` into a ClosedJaxpr.

  The consts may include tracers of enclosing transformations (closures over outer traced
  values); callers that bind a call primitive pass them as arguments (see ``convert_constvars``).
  ``origin``: ``(function description, traced for, argument names)`` for error messages
  about the tracers (``JaxprTracer._origin_msg``).
  """
  trace = JaxprTrace(debug_info, trace_name)
  trace.origin = origin
  if in_shardings is None:
    in_tracers = [trace.new_arg(a) for a in in_avals]
  else:  # how each argument is split over Explicit mesh axes (``core/sharding_types.py``)
    in_tracers = [trace.new_arg(a, s) for a, s in zip(in_avals, in_shardings)]
  # The equations of a traced function record their names relative to it and their own
  # source lines, whatever equation's rule asked for the trace.
  # The XLA metadata in effect (an equation's being re-emitted included) stays in effect.
  context = source_info_lib._context
  prev_stack, prev_eqn, prev_meta = context.name_stack, context.eqn, context.xla_metadata
  context.xla_metadata = source_info_lib.current_xla_metadata()
  context.name_stack, context.eqn = source_info_lib.EMPTY, None
  try:
    with set_current_trace(trace):
      outs = fun(*in_tracers)
      out_tracers = [trace.to_tracer(o) for o in outs]
    jaxpr, consts = trace.to_jaxpr(out_tracers)
  finally:
    context.name_stack, context.eqn = prev_stack, prev_eqn
    context.xla_metadata = prev_meta
    trace.invalidate()
  return ClosedJaxpr(jaxpr, consts)


def convert_constvars(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
  """Turn constvars into leading invars: returns (jaxpr without consts, the const values)."""
  jaxpr = closed.jaxpr
  if not jaxpr.constvars:
    return closed, []
  arg_names = jaxpr.arg_names
  if arg_names is not None:
    arg_names = (None,) * len(jaxpr.constvars) + tuple(arg_names)
  new = Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info,
              jaxpr.result_paths, arg_names)
  return ClosedJaxpr(new, []), list(closed.consts)

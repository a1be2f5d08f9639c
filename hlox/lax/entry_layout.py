"""``entry_layout_p``: the memory layout a jitted program takes an argument in or gives a
result in (``jit`` with ``Format`` in/out shardings, ``hlox.experimental.layout``).

Numerically the identity. Bound on one of the traced program's arguments (``role="in"``)
or results (``role="out"``), its lowering records ``mode`` (an ``mhlo.layout_mode`` value:
"default", "auto" or a minor-to-major list such as "{0,1}") for that argument or result of
the entry function, which ``xla.lower_jaxpr_to_module`` writes onto it; XLA then compiles
the program for those layouts. Anywhere else (eagerly, inside a nested call, under vmap)
there is no entry parameter to lay out and it does nothing.
"""
from __future__ import annotations

from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from hlox.core.primitive import Primitive
from hlox.interpreters import ad, batching, xla
from hlox.lax.call import jit_p
from hlox.runtime import layout as layout_lib
from hlox.runtime.array import Array

from jaxlib.mlir import ir

__all__ = ["default_copy", "entry_layout_p", "with_laid_out"]

entry_layout_p = Primitive("entry_layout")
entry_layout_p.def_abstract_eval(lambda x, *, mode, role: x)
entry_layout_p.def_impl(lambda x, *, mode, role: x)


def _lowering(ctx, x, *, mode, role):
  layouts = ctx.module_context.entry_layouts
  if role == "in":
    # Only an argument of the entry function itself has a layout to choose.
    if isinstance(x, ir.BlockArgument) and x.owner.owner.name.value == "main":
      layouts["in"][x.arg_number] = mode
  else:
    layouts["out"].append((x, mode))
  return x

xla.register_lowering(entry_layout_p, _lowering)
ad.deflinear(entry_layout_p, lambda ct, x, **params: [ct])
# Under vmap the value gains a dimension the layout does not name: left to XLA.
batching.primitive_batchers[entry_layout_p] = lambda vals, dims, **params: (vals[0], dims[0])


# --- results in a non-default layout ------------------------------------------------------
#
# XLA's CPU executables read their arguments in the layout they were compiled for without
# checking the buffers they are given (see docs/RUNTIME_NOTES.md): a result in, say,
# column-major order handed to a program compiled for row-major arguments would be read in
# the wrong order. So every result a program gives in another layout is kept twice: the
# Array's own buffer is a row-major copy (what every other program and every host read
# take), and ``Array._laid_out`` holds the buffer as the program gave it (what ``format``
# reports, and what a program compiled for that layout is passed).

_identities: dict = {}  # (aval, mode) -> the closed jaxpr of a relayout to row-major


def _to_default(x: Array, mode: str) -> Array:
  """``x``'s value in the default layout, from its buffer in layout ``mode``."""
  key = (x.aval, mode)
  closed = _identities.get(key)
  if closed is None:
    a, b = Var(x.aval), Var(x.aval)
    eqn = JaxprEqn([a], [b], entry_layout_p, {"mode": mode, "role": "in"})
    closed = _identities[key] = ClosedJaxpr(Jaxpr([], [a], [b], [eqn]), [])
  (out,) = jit_p.bind(x, jaxpr=closed, name="relayout", donated_invars=(False,),
                      keep_unused=True, inline=False)
  return out


def with_laid_out(x: Array, laid_out) -> Array:
  """A new Array of ``x``'s (default-layout) buffers that also holds ``laid_out``, the same
  value in another layout."""
  out = Array.__new__(Array)
  out.aval, out._npy, out._sig = x.aval, x._npy, x._sig
  out._multi = x._multi
  if x._multi is None:
    out._buf = x._buf
  out._laid_out = laid_out
  return out


def default_copy(x):
  """``x`` itself when its buffer is in the default layout, else an Array whose buffer is a
  default-layout copy and whose ``_laid_out`` is the original buffer."""
  if type(x) is not Array or x._laid_out is not None:
    return x
  buf = x._multi if x._multi is not None else x._buf
  layout = layout_lib.buffer_layout(buf, x.ndim)
  if layout.is_default():
    return x
  return with_laid_out(_to_default(x, layout_lib.layout_mode(layout, x.ndim)), buf)


def _relaid_results(outs: list, modes: dict) -> list:
  outs = list(outs)
  for j in modes:
    outs[j] = default_copy(outs[j])
  return outs

xla.relaid_results = _relaid_results

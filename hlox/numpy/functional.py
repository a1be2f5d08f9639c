"""Applying Python functions over arrays: ``vectorize``, ``apply_along_axis``,
``apply_over_axes``, ``fromfunction`` (mapped with ``vmap``) and ``piecewise``.
"""
from __future__ import annotations

import builtins
import operator
import re


from hlox import api
from hlox.core.tracer import get_aval
from hlox.numpy import creation, shapes, ufuncs, util

__all__ = ["apply_along_axis", "vectorize", "fromfunction", "piecewise", "apply_over_axes"]


def piecewise(x, condlist, funclist, *args, **kw):
  """``funclist[i](x)`` where ``condlist[i]`` holds (a trailing extra function or constant is
  the default)."""
  util.check_arraylike("piecewise", x)
  x = creation.asarray(x)
  nc, nf = len(condlist), len(funclist)
  if nf == nc + 1:
    default, funclist = funclist[-1], funclist[:-1]
  elif nf == nc:
    default = 0
  else:
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected;"
                     f" got {nf}")
  funclist = [default, *funclist]
  # The functions are static arguments of one jitted body (as in JAX): calling piecewise
  # again with the same functions traces nothing; the constants are ordinary arguments.
  funcs = tuple(f if callable(f) else None for f in funclist)
  consts = [None if callable(f) else f for f in funclist]
  conds = [creation.asarray(c) for c in condlist]
  return _piecewise_jit(x, conds, consts, args, kw, funcs=funcs)


def _piecewise_body(x, conds, consts, args, kw, *, funcs):
  dtype = get_aval(x).dtype
  def piece(i):
    f = funcs[i]
    out = f(x, *args, **kw) if f is not None else consts[i]
    return creation.asarray(out).astype(dtype)
  result = shapes.broadcast_to(piece(0), get_aval(x).shape)
  for i, cond in enumerate(conds, 1):
    result = ufuncs.where(cond, piece(i), result)
  return result


_piecewise_jit = api.jit(_piecewise_body, static_argnames=("funcs",))


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """``func1d`` applied to the 1-d slices of ``arr`` along ``axis`` (by ``vmap``)."""
  util.check_arraylike("apply_along_axis", arr)
  arr = creation.asarray(arr)
  nd = get_aval(arr).ndim
  axis = util.canonicalize_axis_tuple(axis, nd, "apply_along_axis")[0]
  func = lambda x: func1d(x, *args, **kwargs)
  for i in builtins.range(1, nd - axis):
    func = api.vmap(func, in_axes=i, out_axes=-1)
  for i in builtins.range(axis):
    func = api.vmap(func, in_axes=0, out_axes=0)
  return func(arr)


def apply_over_axes(func, a, axes):
  """``func(a, axis)`` applied for each axis in turn, keeping the reduced dimensions."""
  util.check_arraylike("apply_over_axes", a)
  a = creation.asarray(a)
  for axis in axes:
    b = func(a, axis)
    if get_aval(b).ndim == get_aval(a).ndim - 1:
      b = shapes.expand_dims(b, axis)
    a = b
  return a


class vectorize:
  """NumPy's ``vectorize`` built on ``vmap``: ``pyfunc`` is mapped over the leading
  (broadcast) dimensions of its array arguments; ``signature`` gives core dimensions."""

  def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
    self.pyfunc = pyfunc
    self.excluded = excluded
    self.signature = signature
    self.__doc__ = getattr(pyfunc, "__doc__", None)
    self.__name__ = getattr(pyfunc, "__name__", "vectorized")

  def __call__(self, *args, **kwargs):
    excluded = {i for i in self.excluded if isinstance(i, int)}
    kw_excluded = {k for k in self.excluded if isinstance(k, str)}
    static_kwargs = {k: v for k, v in kwargs.items() if k in kw_excluded}
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in kw_excluded}
    if dyn_kwargs:
      # Keyword arguments are mapped like positional ones.
      names = list(dyn_kwargs)
      n_pos = len(args)
      def with_kwargs(*all_args):
        return self.pyfunc(*all_args[:n_pos], **dict(zip(names, all_args[n_pos:])),
                           **static_kwargs)
      return vectorize(with_kwargs, excluded=self.excluded, signature=self.signature)(
          *args, *dyn_kwargs.values())
    dyn_idx = [i for i in builtins.range(len(args)) if i not in excluded]
    dyn_args = [creation.asarray(args[i]) for i in dyn_idx]
    if self.signature is None:
      core_in = [()] * len(dyn_args)
      core_out = None
    else:
      core_in, core_out = _parse_signature(self.signature)
      if len(core_in) != len(dyn_args):
        raise TypeError(f"wrong number of positional arguments: expected {len(core_in)}, got "
                        f"{len(dyn_args)}")
    def call(*dyn):
      full = list(args)
      for i, v in zip(dyn_idx, dyn):
        full[i] = v
      return self.pyfunc(*full, **static_kwargs)
    # Broadcast the loop dimensions of every argument together.
    loop_shapes = []
    for a, core in zip(dyn_args, core_in):
      nd_core = len(core)
      shape = get_aval(a).shape
      if len(shape) < nd_core:
        raise ValueError(f"input with shape {shape} does not have enough dimensions for "
                         f"its core dimensions {core}")
      loop_shapes.append(shape[:len(shape) - nd_core])
    loop_shape = util.broadcast_shapes(*loop_shapes) if loop_shapes else ()
    bargs = []
    for a, core, ls in zip(dyn_args, core_in, loop_shapes):
      core_shape = get_aval(a).shape[len(ls):]
      bargs.append(shapes.broadcast_to(a, loop_shape + core_shape))
    f = call
    for _ in builtins.range(len(loop_shape)):
      f = api.vmap(f)
    return f(*bargs)


def _parse_signature(signature):
  m = re.fullmatch(r"\s*(.*?)\s*->\s*(.*?)\s*", signature)
  if m is None:
    raise ValueError(f"not a valid gufunc signature: {signature}")
  def parse(s):
    return [tuple(d.strip() for d in g.split(",") if d.strip())
            for g in re.findall(r"\(([^()]*)\)", s)]
  return parse(m.group(1)), parse(m.group(2))


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """``function(*indices)`` evaluated on the index grids of ``shape``."""
  shape = tuple(operator.index(d) for d in shape)
  f = lambda *idx: function(*idx, **kwargs)
  for i in builtins.range(len(shape) - 1, -1, -1):
    f = api.vmap(f, in_axes=tuple(0 if j == i else None for j in builtins.range(len(shape))))
  return f(*(creation.arange(d, dtype=dtype) for d in shape))

"""Applying Python functions over arrays: ``vectorize``, ``apply_along_axis``,
``apply_over_axes``, ``fromfunction`` (mapped with ``vmap``) and ``piecewise``.
"""
from __future__ import annotations

import builtins
import operator
import re
import warnings

from hlox import api, config
from hlox.core.tracer import get_aval
from hlox.numpy import creation, shapes, ufuncs, util

__all__ = ["apply_along_axis", "vectorize", "fromfunction", "piecewise", "apply_over_axes"]


def piecewise(x, condlist, funclist, *args, **kw):
  """Evaluate a piecewise-defined function: ``funclist[i](x)`` where ``condlist[i]`` holds.

  Where several conditions hold, the last one wins; where none holds, the default applies.
  Every function is evaluated on all of ``x`` (under ``jit`` too) and the results selected.

  Args:
    x: array-like input.
    condlist: a sequence of boolean array-likes of ``x``'s shape.
    funclist: a sequence of callables or constants, one per condition, optionally followed by
      one more: the default (otherwise 0).
    *args: extra positional arguments passed to each function.
    **kw: extra keyword arguments passed to each function.

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> x = jnp.array([-2., -1., 0., 1., 2.])
    >>> jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])
    Array([2., 1., 0., 1., 4.], dtype=float32)
    >>> jnp.piecewise(x, [x > 1], [10.])
    Array([ 0.,  0.,  0.,  0., 10.], dtype=float32)
  """
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
  """Apply ``func1d`` to the 1-d slices of ``arr`` along an axis.

  The function is mapped with ``vmap`` (so it is traced once, with a 1-d argument), not called
  once per slice.

  Args:
    func1d: a function of a 1-d array, returning an array.
    axis: the axis along which the slices run.
    arr: array-like input.
    *args: extra positional arguments for ``func1d``.
    **kwargs: extra keyword arguments for ``func1d``.

  Returns:
    The results stacked: ``arr``'s other axes, with ``func1d``'s output axes in place of
    ``axis``.

  Examples:
    >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
    >>> jnp.apply_along_axis(jnp.sum, 1, x)
    Array([ 6, 15], dtype=int32)
    >>> jnp.apply_along_axis(lambda v: v[::-1], 0, x)
    Array([[4, 5, 6],
           [1, 2, 3]], dtype=int32)
  """
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
  """Apply ``func(a, axis)`` repeatedly, once for each axis in ``axes``.

  Each result must have ``a``'s rank, or one less (then the reduced axis is restored with
  size 1), and is the input of the next call.

  Args:
    func: a function ``(array, axis) -> array``, such as a reduction.
    a: array-like input.
    axes: a sequence of ints.

  Returns:
    An array of ``a``'s rank.

  Examples:
    >>> x = jnp.arange(6).reshape(2, 3)
    >>> jnp.apply_over_axes(jnp.sum, x, [0, 1])
    Array([[15]], dtype=int32)
  """
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
  (broadcast) dimensions of its array arguments; ``signature`` gives core dimensions.

  ``excluded`` names positional indices or keyword names passed to ``pyfunc`` unchanged; a
  ``None`` argument is passed through unchanged too (it must have no core dimensions). With a
  signature, the outputs are checked against its core dimensions.
  """

  def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
    if any(not isinstance(e, (str, int)) for e in excluded):
      raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                      f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
      raise ValueError(f"excluded={excluded!r} contains negative numbers")
    self.pyfunc = pyfunc
    self.excluded = excluded
    self.signature = signature
    self.__doc__ = getattr(pyfunc, "__doc__", None)
    self.__name__ = getattr(pyfunc, "__name__", "vectorized")
    self.__wrapped__ = pyfunc

  def __call__(self, *args, **kwargs):
    context = (f"on vectorized function with excluded={self.excluded!r} and "
               f"signature={self.signature!r}")
    func, args, kwargs = _bind_excluded(self.pyfunc, self.excluded, args, kwargs)
    if kwargs:
      # Keyword arguments are mapped like positional ones, after them.
      names, n_pos, inner = list(kwargs), len(args), func
      func = lambda *a: inner(*a[:n_pos], **dict(zip(names, a[n_pos:])))
      args = (*args, *kwargs.values())
    if self.signature is None:
      core_in, core_out = [()] * len(args), None
    else:
      core_in, core_out = _parse_signature(self.signature)
    nones = {i for i, a in enumerate(args) if a is None}
    if nones:
      if any(i < len(core_in) and core_in[i] != () for i in nones):
        raise ValueError(f"Cannot pass None at locations {nones} with "
                         f"signature={self.signature!r}")
      func, args, _ = _bind_excluded(func, nones, args, {})
      core_in = [c for i, c in enumerate(core_in) if i not in nones]
    args = [creation.asarray(a) for a in args]
    loop_shape, dim_sizes = _input_dimensions(args, core_in, context)
    if core_out is not None:
      func = _checking_outputs(func, dim_sizes, core_out, context)
    _check_rank_promotion(args, core_in, self.signature)
    return _map_over_loop_dims(func, args, core_in, loop_shape)


def _bind_excluded(func, excluded, args, kwargs):
  """``func`` with the excluded positional and keyword arguments bound, and the rest."""
  if not excluded:
    return func, args, kwargs
  fixed = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int))
           if i < len(args)]
  fixed_kw = {k: v for k, v in kwargs.items() if k in excluded}
  def bound(*rest, **kw):
    rest = list(rest)
    for i, v in fixed:
      rest.insert(i, v)
    return func(*rest, **kw, **fixed_kw)
  rest = [a for i, a in enumerate(args) if i not in excluded]
  return bound, rest, {k: v for k, v in kwargs.items() if k not in excluded}


def _check_core_dims(sizes, shape, core, context, *, is_input):
  """Records the sizes of the named core dimensions of one shape, checking consistency."""
  if is_input and len(shape) < len(core):
    raise ValueError(f"input with shape {tuple(shape)!r} does not have enough dimensions for "
                     f"all core dimensions {core!r} {context}")
  if not is_input and len(shape) != len(core):
    raise ValueError(f"output shape {tuple(shape)!r} does not match core dimensions "
                     f"{core!r} {context}")
  for name, size in zip(core, shape[len(shape) - len(core):]):
    if sizes.setdefault(name, size) != size:
      raise ValueError(f"inconsistent size for core dimension {name!r}: {size!r} vs "
                       f"{sizes[name]!r} {context}")


def _input_dimensions(args, core_in, context):
  """The broadcast loop shape of the inputs and the sizes of their core dimensions."""
  if len(args) != len(core_in):
    raise TypeError(f"wrong number of positional arguments: expected {len(core_in)}, got "
                    f"{len(args)} {context}")
  sizes, loop_shapes = {}, []
  for a, core in zip(args, core_in):
    shape = get_aval(a).shape
    _check_core_dims(sizes, shape, core, context, is_input=True)
    loop_shapes.append(shape[:len(shape) - len(core)])
  return util.broadcast_shapes(*loop_shapes), sizes


def _checking_outputs(func, dim_sizes, core_out, context):
  """``func`` whose outputs are checked against the signature's output core dimensions."""
  def checked(*args):
    out = func(*args)
    outs = out if isinstance(out, tuple) else [out]
    if len(core_out) > 1 and not isinstance(out, tuple):
      raise TypeError(f"output must be a tuple when multiple outputs are expected, got: "
                      f"{out!r}\n{context}")
    if len(outs) != len(core_out):
      raise TypeError(f"wrong number of output arguments: expected {len(core_out)}, got "
                      f"{len(outs)} {context}")
    sizes = dict(dim_sizes)
    for o, core in zip(outs, core_out):
      _check_core_dims(sizes, _shape_of(o), core, context, is_input=False)
    return out
  return checked


def _shape_of(x):
  aval = getattr(x, "aval", None)
  return aval.shape if aval is not None else get_aval(creation.asarray(x)).shape


def _check_rank_promotion(args, core_in, signature):
  # Mapping arguments whose loop ranks differ is rank promotion (scalars excepted).
  mode = config._values["numpy_rank_promotion"]
  if mode == "allow":
    return
  ranks = {get_aval(a).ndim - len(core) for a, core in zip(args, core_in)
           if get_aval(a).ndim}
  if len(ranks) > 1:
    msg = (f"operands with shapes {[get_aval(a).shape for a in args]} require rank "
           f"promotion for jnp.vectorize function with signature {signature}. Set the "
           "jax_numpy_rank_promotion config option to 'allow' to disable this message.")
    if mode == "raise":
      raise ValueError(msg)
    warnings.warn(msg, stacklevel=3)


def _map_over_loop_dims(func, args, core_in, loop_shape):
  """``func`` applied with ``vmap`` over the loop dimensions; an argument of size 1 in a loop
  dimension is not mapped there (in_axes None), and a loop dimension no argument maps is
  added to the result afterwards, so nothing is broadcast to the full shape."""
  squeezed, padded = [], []
  for a, core in zip(args, core_in):
    shape = get_aval(a).shape
    loop = shape[:len(shape) - len(core)]
    padded.append((1,) * (len(loop_shape) - len(loop)) + tuple(loop))
    ones = tuple(i for i, d in enumerate(loop) if d == 1)
    squeezed.append(shapes.squeeze(a, axis=ones) if ones else a)
  f, unmapped = func, []
  for axis in builtins.range(len(loop_shape) - 1, -1, -1):
    in_axes = tuple(None if p[axis] == 1 else 0 for p in padded)
    if all(i is None for i in in_axes):
      unmapped.append(axis)
    else:
      f = api.vmap(f, in_axes=in_axes)
  out = f(*squeezed)
  if not unmapped:
    return out
  axes = tuple(sorted(unmapped))
  if isinstance(out, tuple):
    return tuple(shapes.expand_dims(o, axes) for o in out)
  return shapes.expand_dims(out, axes)


def _parse_signature(signature):
  m = re.fullmatch(r"\s*(.*?)\s*->\s*(.*?)\s*", signature)
  if m is None:
    raise ValueError(f"not a valid gufunc signature: {signature}")
  def parse(s):
    return [tuple(d.strip() for d in g.split(",") if d.strip())
            for g in re.findall(r"\(([^()]*)\)", s)]
  return parse(m.group(1)), parse(m.group(2))


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """An array whose entry at each index is ``function(*index)``.

  ``function`` is called once, mapped with ``vmap`` over the index grids, so it must work on
  traced scalars (it cannot branch on their values in Python).

  Args:
    function: a function of ``len(shape)`` scalar arguments.
    shape: a tuple of ints.
    dtype: keyword-only dtype of the index values passed to ``function`` (default float).
    **kwargs: extra keyword arguments for ``function``.

  Returns:
    An array of shape ``shape`` (for a scalar-valued ``function``).

  Examples:
    >>> jnp.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int)
    Array([[ 0,  1,  2],
           [10, 11, 12]], dtype=int32)
  """
  shape = tuple(operator.index(d) for d in shape)
  f = lambda *idx: function(*idx, **kwargs)
  for i in builtins.range(len(shape) - 1, -1, -1):
    f = api.vmap(f, in_axes=tuple(0 if j == i else None for j in builtins.range(len(shape))))
  return f(*(creation.arange(d, dtype=dtype) for d in shape))

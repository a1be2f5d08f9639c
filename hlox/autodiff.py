"""User-facing autodiff transformations: jvp, linearize, vjp, grad, value_and_grad, jacfwd,
jacrev, hessian. Argument handling only; the machinery is in ``interpreters/ad.py``."""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import numpy as np

from hlox import lax
from hlox.lax import state as lax_state

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core.jaxpr import ClosedJaxpr, dce_jaxpr, eval_jaxpr, trace_to_jaxpr
from hlox.core.refs import Ref
from hlox.core.traceback_util import api_boundary
from hlox.core.wrapping import wraps
from hlox.core.tracer import Tracer, get_aval
from hlox.interpreters import ad
from hlox.api import abstractify_spec, vmap
from hlox.runtime.array import Array, device_put, put_exact

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian",
           "hessian", "linear_transpose"]


def _fun_name(fun) -> str:
  return getattr(fun, "__name__", None) or type(fun).__name__


def _flat_fun(fun, in_tree, has_aux=False):
  """``fun`` on flat leaves; records the output tree (and aux) in the returned box."""
  box = {}

  def flat(*leaves):
    args = tree_util.tree_unflatten(in_tree, leaves)
    out = fun(*args)
    if has_aux:
      if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{_fun_name(fun)} with has_aux=True must return a two-element tuple "
                        f"(output, aux), got {type(out).__name__}")
      out, aux = out
      # Traced aux leaves leave the transformation as extra outputs (their primal values are
      # what the caller gets); other leaves (Python values, concrete arrays) pass as they are.
      aux_leaves, aux_tree = tree_util.tree_flatten(aux)
      traced = [isinstance(a, Tracer) for a in aux_leaves]
      box["aux_parts"] = (aux_leaves, aux_tree, traced)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    box["out_tree"] = out_tree
    box["n_out"] = len(out_leaves)
    if has_aux:
      return out_leaves + [a for a, t in zip(aux_leaves, traced) if t]
    return out_leaves
  return flat, box


def _split_aux(box, outs):
  """Split flat outputs of a ``_flat_fun`` into (outputs, aux tree)."""
  n = box["n_out"]
  if "aux_parts" not in box:
    return outs, None
  aux_leaves, aux_tree, traced = box["aux_parts"]
  it = iter(outs[n:])
  aux = [next(it) if t else a for a, t in zip(aux_leaves, traced)]
  return outs[:n], tree_util.tree_unflatten(aux_tree, aux)


def _check_arraylike_leaves(name, leaves):
  for x in leaves:
    get_aval(x)  # raises a TypeError naming the type for non-arrays


def _as_arrays(leaves):
  """Python scalars and NumPy values as Arrays (weak types kept), as JAX converts arguments:
  an output that is an input then comes back as an Array too."""
  out = []
  for x in leaves:
    if not isinstance(x, (Tracer, Array)) and get_aval(x).dtype != dtypes.float0:
      x = device_put(x)
    out.append(x)
  return out


def _host_primal(x):
  """A primal that is not differentiated (integer, boolean) as ``vjp`` hands it to the
  function: as JAX, NumPy values stay on the host (in the canonical dtype), so NumPy's own
  arithmetic applies to them there; Python scalars as they are; anything else as an
  Array."""
  if isinstance(x, (np.ndarray, np.generic)) and type(x) is not np.ma.MaskedArray:
    dtype = dtypes.canonicalize_dtype(x.dtype)
    return x if dtype == x.dtype else np.asarray(x, dtype)
  if type(x) in (bool, int):
    return x
  return _as_arrays([x])[0]


def _zeros_tangent(aval):
  return _as_arrays([ad.zeros_like_aval(aval.to_tangent_aval())])[0]


def _instantiate(t):
  """A symbolic Zero tangent/cotangent as an Array of zeros (as JAX returns), not a NumPy
  scalar; other values as they are."""
  return _zeros_tangent(t.aval) if type(t) is ad.Zero else t


@api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
  """Forward-mode derivative: ``fun``'s value and its directional derivative along tangents.

  Evaluates ``fun(*primals)`` and, in the same pass, the Jacobian-vector product
  ``J(primals) @ tangents``. Each tangent must have the structure, shape and dtype of its
  primal (float0 for integer or bool primals), else TypeError/ValueError. Composes with
  ``jit``, ``vmap`` and other derivatives.

  Args:
    fun: the function to differentiate; its positional arguments are pytrees of arrays.
    primals: tuple or list of the arguments at which to evaluate (TypeError otherwise).
    tangents: tuple or list of tangents of the same structure as ``primals``.
    has_aux: if True, ``fun`` returns ``(output, aux)``; ``aux`` is not differentiated.

  Returns:
    ``(primals_out, tangents_out)``, or ``(primals_out, tangents_out, aux)`` under
    ``has_aux``.

  Examples:
    >>> hlox.jvp(jnp.sin, (0.,), (2.,))
    (Array(0., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))
    >>> hlox.jvp(lambda x: x ** 2, (jnp.array([1., 3.]),), (jnp.ones(2),))
    (Array([1., 9.], dtype=float32), Array([2., 6.], dtype=float32))

  See also:
    :func:`hlox.linearize`, :func:`hlox.jacfwd`.
  """
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  # As JAX: primals and tangents must have one structure, containers included (a tuple of
  # primals with a list of tangents is an error).
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  t_leaves, t_tree = tree_util.tree_flatten(tangents)
  if p_tree != t_tree:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                    f"structure; primals have tree structure {p_tree} whereas tangents have "
                    f"tree structure {t_tree}.")
  p_tree = tree_util.tree_structure(tuple(primals))
  tangents_in = []
  for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
    p_aval, t_aval = get_aval(p), get_aval(t)
    expected = p_aval.to_tangent_aval()
    if t_aval.dtype != expected.dtype:
      raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be "
                      "equal, or in case of int/bool primal dtype the tangent dtype must be "
                      f"float0. Got primal dtype {p_aval.dtype} and so expected tangent "
                      f"dtype {expected.dtype}, but got tangent dtype {t_aval.dtype} instead.")
    if t_aval.shape != p_aval.shape:
      raise ValueError("jvp called with different primal and tangent shapes; Got primal "
                       f"shape {p_aval.shape} and tangent shape as {t_aval.shape}")
    tangents_in.append(ad.Zero(expected) if expected.dtype == dtypes.float0 else t)
  flat, box = _flat_fun(fun, p_tree, has_aux)
  out_p, out_t = ad.jvp(flat, p_leaves, tangents_in, transform_stack=True)
  out_p, aux = _split_aux(box, out_p)
  out_t = [_instantiate(t) for t in out_t[:len(out_p)]]
  out_tree = box["out_tree"]
  result = (tree_util.tree_unflatten(out_tree, out_p), tree_util.tree_unflatten(out_tree, out_t))
  return (*result, aux) if has_aux else result


@api_boundary
def linearize(fun: Callable, *primals, has_aux: bool = False):
  """Evaluate ``fun`` and return its linearization at ``primals`` as a function.

  Like :func:`hlox.jvp`, but the linear part is kept: ``f_jvp(*tangents)`` evaluates
  ``J(primals) @ tangents`` for new tangents without recomputing ``fun``'s nonlinear work
  (the residuals are stored). ``f_jvp`` is a ``Partial``, so it can cross ``jit`` boundaries.

  Args:
    fun: the function to linearize.
    *primals: the positional arguments at which to linearize (pytrees of arrays).
    has_aux: if True, ``fun`` returns ``(output, aux)``; ``aux`` is not differentiated.

  Returns:
    ``(primals_out, f_jvp)``, or ``(primals_out, f_jvp, aux)`` under ``has_aux``.

  Examples:
    >>> y, f_jvp = hlox.linearize(jnp.sin, 0.)
    >>> f_jvp(2.)
    Array(2., dtype=float32, weak_type=True)
  """
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  flat, box = _flat_fun(fun, p_tree, has_aux)
  nonzeros = [dtypes.is_inexact(get_aval(p).dtype) for p in p_leaves]
  out_p, lin = ad.linearize(flat, p_leaves, nonzeros, transform_stack=True)
  out_p, aux = _split_aux(box, out_p)
  n_out = len(out_p)
  # As JAX's, the linear function is a ``Partial`` of a ``functools.partial`` whose first
  # argument is the linear jaxpr (users inspect the residual recomputation through
  # ``f_jvp.func.args[0]``).
  p_avals = [get_aval(p) for p in p_leaves]
  f_jvp = tree_util.Partial(functools.partial(_lifted_jvp, lin.jaxpr.jaxpr, lin, nonzeros,
                                              n_out, box["out_tree"], p_tree, p_avals))
  f_jvp.out_nzs = tuple(not z for z in lin.out_zeros[:n_out])
  out_tree = box["out_tree"]
  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def _lifted_jvp(jaxpr, lin, nonzeros, n_out, out_tree, p_tree, p_avals, *tangents):
  del jaxpr  # carried for inspection only; ``lin`` evaluates it
  t_leaves, t_tree = tree_util.tree_flatten(tangents)
  if t_tree != p_tree:
    raise TypeError(f"linearized function called with tangent structure {t_tree}, "
                    f"expected {p_tree}")
  for t, p_aval in zip(t_leaves, p_avals):
    t_aval, expected = get_aval(t), p_aval.to_tangent_aval()
    if (t_aval.shape, t_aval.dtype) != (expected.shape, expected.dtype):
      raise ValueError("linearized function called on tangent values inconsistent with the "
                       f"original primal values: got tangent aval {t_aval.str_short()} for "
                       f"primal aval {p_aval.str_short()}")
  outs = lin(*[t for t, nz in zip(t_leaves, nonzeros) if nz])[:n_out]
  return tree_util.tree_unflatten(out_tree, [_instantiate(t) for t in outs])


@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
  """Reverse-mode derivative: ``fun``'s value and a function pulling cotangents back.

  ``fun`` runs forward once at ``primals``; the returned ``f_vjp`` maps a cotangent of the
  output (same structure, shapes and dtypes as the output) to the vector-Jacobian product, one
  cotangent per primal. ``f_vjp`` is a pytree (a ``Partial``), so it can be passed to and
  returned from jitted functions, and called any number of times. Integer primals get float0
  cotangents.

  Args:
    fun: the function to differentiate.
    *primals: the positional arguments at which to evaluate ``fun`` (pytrees of arrays).
    has_aux: if True, ``fun`` returns ``(output, aux)``; ``aux`` is not differentiated.

  Returns:
    ``(primals_out, f_vjp)``, or ``(primals_out, f_vjp, aux)`` under ``has_aux``; ``f_vjp``
    returns a tuple with one cotangent per primal.

  Examples:
    >>> y, f_vjp = hlox.vjp(lambda x, y: x * y, 2., 3.)
    >>> y
    Array(6., dtype=float32, weak_type=True)
    >>> f_vjp(1.)
    (Array(3., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))

  See also:
    :func:`hlox.grad`, :func:`hlox.linear_transpose`.
  """
  user_leaves, p_tree = tree_util.tree_flatten(primals)
  _check_arraylike_leaves("vjp", user_leaves)
  nonzeros = [dtypes.is_inexact(get_aval(p).dtype) for p in user_leaves]
  p_leaves = [_as_arrays([x])[0] if nz else _host_primal(x)
              for x, nz in zip(user_leaves, nonzeros)]
  flat, box = _flat_fun(fun, p_tree, has_aux)
  out_p, lin = ad.linearize(flat, p_leaves, nonzeros, transform_stack=True)
  out_p, aux = _split_aux(box, out_p)
  n_aux = len(lin.out_avals) - len(out_p)
  out_tree = box["out_tree"]
  out_avals = [get_aval(o) for o in out_p]
  in_avals = [get_aval(p) for p in p_leaves]

  # As JAX's, the pullback is a pytree whose children are the residuals, so it can be
  # returned from and passed to jitted functions; everything else is static.
  info = _VJPInfo(_fun_name(fun), lin, p_tree, out_tree, out_avals, in_avals, nonzeros, n_aux)
  spec, args_res, opaque = _split_residuals(user_leaves, p_tree, lin.jaxpr.consts)
  f_vjp = _Pullback(info, spec, args_res, opaque)

  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, f_vjp, aux) if has_aux else (out, f_vjp)


# What ``f_vjp.with_refs`` takes per argument besides a ``Ref`` (accumulate the cotangent
# into it): ``GradValue()`` (return the cotangent, the default) or ``DontWant()`` (skip it);
# in the results, ``GradRef()`` and ``DidntWant()`` stand where no value is returned.
@dataclasses.dataclass(frozen=True)
class GradValue:
  """``with_refs`` marker: return this argument's cotangent as a value."""


@dataclasses.dataclass(frozen=True)
class DontWant:
  """``with_refs`` marker: this argument's cotangent is not wanted."""


@dataclasses.dataclass(frozen=True)
class GradRef:
  """``with_refs`` result where the cotangent went into the given ``Ref``."""


@dataclasses.dataclass(frozen=True)
class DidntWant:
  """``with_refs`` result for an argument marked ``DontWant``."""


@dataclasses.dataclass(frozen=True)
class NotNeeded:
  """Stands in ``f_vjp.args_res`` for an argument leaf the pullback does not use."""


def _split_residuals(user_leaves, p_tree, residuals):
  """Tells the residuals that are the caller's own argument values (kept in ``args_res``,
  one entry per argument, ``NotNeeded()`` where a leaf is not saved) from those computed
  (``opaque_residuals``). ``spec`` records, per residual, ``(True, leaf index)`` or
  ``(False, index in opaque)``. As JAX, identity decides: a residual that is the very
  object passed (not a converted copy) is an argument's."""
  leaf_of = {id(x): i for i, x in enumerate(user_leaves)}
  spec, opaque, kept = [], [], {}
  for r in residuals:
    i = leaf_of.get(id(r))
    if i is None:
      spec.append((False, len(opaque)))
      opaque.append(r)
    else:
      spec.append((True, i))
      kept[i] = r
  keep = [kept.get(i, NotNeeded()) for i in range(len(user_leaves))]
  args_res = list(tree_util.tree_unflatten(p_tree, keep))
  return tuple(spec), args_res, opaque


class _Pullback:
  """The pullback ``vjp`` returns. A pytree whose children are the residuals:
  ``args_res`` (the argument values it saved, one entry per argument, which a caller may
  drop and restore before calling) and ``opaque_residuals`` (values computed on the way);
  ``jaxpr`` is the linear (backward) program. ``with_refs`` accumulates cotangents into
  references in place."""

  __slots__ = ("_info", "_spec", "args_res", "opaque_residuals", "__weakref__")

  def __init__(self, info, spec, args_res, opaque_residuals):
    self._info, self._spec = info, spec
    self.args_res, self.opaque_residuals = args_res, opaque_residuals

  @property
  def jaxpr(self):
    """The linear jaxpr that maps output cotangents to argument cotangents; its constvars
    are the residuals."""
    return self._info.jaxpr

  @property
  def out_nzs(self):
    """Per output leaf, whether its tangent can be nonzero."""
    _, out_zeros, _ = self._info.lin_avals
    return tuple(not z for z in out_zeros[:len(self._info.out_avals)])

  def _residuals(self):
    saved = tree_util.tree_leaves(self.args_res, is_leaf=lambda x: isinstance(x, NotNeeded))
    if len(saved) != len(self._info.in_avals):
      raise ValueError("the VJP function's args_res must have the structure of the "
                       f"differentiated function's arguments ({self._info.p_tree}); got "
                       f"{len(saved)} leaves for {len(self._info.in_avals)} argument leaves")
    out = []
    for from_args, i in self._spec:
      if not from_args:
        out.append(self.opaque_residuals[i])
        continue
      r = saved[i]
      if isinstance(r, NotNeeded):
        raise ValueError(f"the VJP function's args_res[...] entry for argument leaf {i} was "
                         "not restored before applying the VJP function")
      out.extend(_as_arrays([r]))  # a restored value may be a host value
    return out

  def __call__(self, *args):
    return _vjp_pullback(self._info, self._residuals(), *args)

  def _wanted_cotangents(self, ct, wanted):
    """The argument cotangent leaves (None where not ``wanted``), computing only what the
    wanted ones need: the backward pass is traced, pruned and then evaluated."""
    if all(wanted):
      return tree_util.tree_leaves(self(ct))
    ct_leaves, ct_tree = tree_util.tree_flatten(ct)

    def backward(*leaves):
      cts = tree_util.tree_leaves(self(tree_util.tree_unflatten(ct_tree, leaves)))
      return [c for c, w in zip(cts, wanted) if w]

    closed = trace_to_jaxpr(backward, [get_aval(c) for c in ct_leaves], "vjp_with_refs")
    jaxpr, _ = dce_jaxpr(closed.jaxpr)
    outs = iter(eval_jaxpr(jaxpr, closed.consts, *ct_leaves))
    return [next(outs) if w else None for w in wanted]

  def with_refs(self, *accums):
    """The pullback with ``accums``, one per primal argument leaf: a ``Ref`` gets the
    leaf's cotangent added into it (``GradRef()`` is returned in its place), ``DontWant()``
    drops it (``DidntWant()`` in its place); anything else returns it as a value."""
    def apply(ct):
      acc_leaves, acc_tree = tree_util.tree_flatten(accums)
      ct_tree = self._info.p_tree
      if acc_tree != ct_tree:
        raise ValueError("unexpected tree structure in the arguments to a VJP function's "
                         f"`with_refs` method: got {acc_tree}, but the primal arguments of "
                         f"the differentiated function have structure {ct_tree} (one Ref, "
                         "GradValue() or DontWant() per array argument)")
      ct_leaves = self._wanted_cotangents(ct, [not isinstance(a, DontWant) for a in acc_leaves])
      out = []
      for c, a in zip(ct_leaves, acc_leaves):
        if isinstance(a, Ref):
          want, got = get_aval(c), get_aval(a).inner_aval
          if (want.shape, want.dtype) != (got.shape, got.dtype):
            raise ValueError(
                "unexpected JAX type (e.g. shape/dtype) for gradient ref passed to the VJP "
                f"function's `with_refs` method: the given ref has type {get_aval(a).str_short()}, but "
                f"accumulating this argument's gradient requires a ref of type "
                f"Ref{{{want.str_short()}}}")
          lax_state.addupdate(a, (), c)
          out.append(GradRef())
        elif isinstance(a, DontWant):
          out.append(DidntWant())
        else:
          out.append(c)
      return tree_util.tree_unflatten(ct_tree, out)
    return apply


# Results in place of a cotangent: pytrees with no leaves (so ``with_refs``'s results can
# leave a jitted function).
for _marker in (GradRef, DidntWant):
  tree_util.register_pytree_node(_marker, lambda m: ((), None),
                                 lambda _, __, cls=_marker: cls())

tree_util.register_pytree_node(NotNeeded, lambda m: ((), None), lambda _, __: NotNeeded())
tree_util.register_pytree_node(
    _Pullback, lambda p: ((p.args_res, p.opaque_residuals), (p._info, p._spec)),
    lambda meta, children: _Pullback(*meta, *children))


class _VJPInfo:
  """The static part of a pullback made by ``vjp``: its linear jaxpr and the trees and
  types of the arguments and results."""

  __slots__ = ("name", "jaxpr", "lin_avals", "p_tree", "out_tree", "out_avals", "in_avals",
               "nonzeros", "n_aux")

  def __init__(self, name, lin, p_tree, out_tree, out_avals, in_avals, nonzeros, n_aux):
    # Not ``lin`` itself: its consts (the residuals) are the pullback's children.
    self.name, self.jaxpr = name, lin.jaxpr.jaxpr
    self.lin_avals = (lin.in_avals, lin.out_zeros, lin.out_avals)
    self.p_tree, self.out_tree = p_tree, out_tree
    self.out_avals, self.in_avals, self.nonzeros, self.n_aux = (out_avals, in_avals,
                                                                 nonzeros, n_aux)


def _vjp_pullback(info, residuals, *args):
  if len(args) != 1:
    name = info.name
    raise TypeError(f"The function returned by `jax.vjp` applied to {name} was called with "
                    f"{len(args)} arguments, but functions returned by `jax.vjp` must be "
                    f"called with a single argument corresponding to the single value "
                    f"returned by {name} (even if that returned value is a tuple or other "
                    f"container).")
  ct, = args
  ct_leaves, ct_tree = tree_util.tree_flatten(ct)
  if ct_tree != info.out_tree:
    raise ValueError(f"unexpected tree structure of argument to vjp function: got "
                     f"{ct_tree}, but expected to match {info.out_tree} (the structure of "
                     f"the function's output)")
  for c, a in zip(ct_leaves, info.out_avals):
    c_aval, expected = get_aval(c), a.to_tangent_aval()
    # As JAX: the cotangent must have the output's tangent type (weak types aside); any
    # cotangent of the right shape is accepted where that type is float0.
    if c_aval.shape != a.shape or (c_aval.dtype != expected.dtype
                                   and expected.dtype != dtypes.float0):
      raise ValueError("unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                       f"function: got {c_aval.str_short()}, but expected "
                       f"{expected.str_short()} because the corresponding output of the "
                       f"differentiated function had JAX type {a.str_short()}")
  lin = ad.Linearized(ClosedJaxpr(info.jaxpr, list(residuals)), *info.lin_avals)
  n_aux = info.n_aux
  cts_in = iter(lin.transpose(list(ct_leaves) + [ad.Zero(a) for a in lin.out_avals[-n_aux:]]
                              if n_aux else ct_leaves, transform_stack=True))
  result = [_instantiate(next(cts_in)) if nz else _zeros_tangent(a)
            for a, nz in zip(info.in_avals, info.nonzeros)]
  return tuple(tree_util.tree_unflatten(info.p_tree, result))


def _normalize_argnums(argnums, nargs, name):
  single = isinstance(argnums, int)
  nums = (argnums,) if single else tuple(argnums)
  for i in nums:
    if not isinstance(i, (int, np.integer)):
      raise TypeError(f"{name}: argnums must be ints, got {argnums!r}")
    if i >= nargs and name == "grad":
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                      f"{max(nums) + 1} positional arguments to be passed by the caller, but "
                      f"got only {nargs} positional arguments.")
    if not -nargs <= i < nargs:
      raise ValueError(f"{name}: argnums {argnums} out of range for a function called with "
                       f"{nargs} positional arguments")
  return single, tuple(int(i) % nargs for i in nums)


def _check_input_dtypes(name, x, argnum, holomorphic, allow_int):
  for leaf in tree_util.tree_leaves(x):
    _check_input_dtype(name, argnum, holomorphic, allow_int, leaf)


def _map_input_checks(check, dyn) -> None:
  """``check`` on every leaf of the differentiated arguments ``dyn``, mapped over their
  pytree as JAX's jacfwd and jacrev do: custom nodes are rebuilt from the checks' None
  results, so a class whose constructor rejects None fails here, as it does with JAX."""
  tree_util.tree_map(check, dyn)


def _check_input_dtype(name, argnum, holomorphic, allow_int, leaf):
  dtype = get_aval(leaf).dtype
  if holomorphic:
    if not dtypes.is_complex(dtype):
      raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                      f"but got {dtype} (argument {argnum})")
  elif not dtypes.is_inexact(dtype) and getattr(dtype, "kind", None) == "T":
    raise TypeError(f"Argument '{leaf}' of type {type(leaf)} is not a valid JAX type.")
  elif not dtypes.is_inexact(dtype) and not allow_int:
    raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dtype} (argument {argnum}). "
                    "Pass allow_int=True to differentiate with respect to it (its gradient "
                    "is float0), or convert it to a float.")


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes=()):
  """Like ``grad``, but the function also returns the value of ``fun``.

  Evaluating ``fun`` and its gradient together costs no more than ``grad`` alone, since the
  forward pass computes the value anyway. The requirements on ``fun`` and its arguments are
  those of :func:`hlox.grad` (real scalar output, floating inputs unless ``allow_int``).

  Args:
    fun: function to differentiate.
    argnums: int or tuple of ints: the positional arguments to differentiate with respect to.
    has_aux: if True, ``fun`` returns ``(output, aux)``; only ``output`` is differentiated.
    holomorphic: if True, ``fun`` is holomorphic and complex inputs are allowed.
    allow_int: if True, integer arguments are allowed and get float0 gradients.
    reduce_axes: accepted for compatibility; ignored.

  Returns:
    A function returning ``(value, gradient)``, or ``((value, aux), gradient)`` under
    ``has_aux``.

  Examples:
    >>> hlox.value_and_grad(lambda x: jnp.sum(x ** 2))(jnp.array([1., 2.]))
    (Array(5., dtype=float32), Array([2., 4.], dtype=float32))
  """

  @wraps(fun)
  def value_and_grad_f(*args, **kwargs):
    single, nums = _normalize_argnums(argnums, len(args), "grad")
    for i in nums:
      _check_input_dtypes("grad", args[i], i, holomorphic, allow_int)
    diff_args = tuple(args[i] for i in nums)

    def partial_fun(*dyn):
      full = list(args)
      for i, d in zip(nums, dyn):
        full[i] = d
      return fun(*full, **kwargs)

    out = vjp(partial_fun, *diff_args, has_aux=has_aux)
    if has_aux:
      value, f_vjp, aux = out
    else:
      value, f_vjp = out
    value_aval = get_aval(value) if not isinstance(value, (tuple, list, dict)) else None
    if value_aval is None or value_aval.shape != ():
      shape = value_aval.shape if value_aval is not None else type(value).__name__
      raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                      f"{shape}")
    if holomorphic:
      if not dtypes.is_complex(value_aval.dtype):
        raise TypeError("grad with holomorphic=True requires a complex output, got "
                        f"{value_aval.dtype}")
    elif dtypes.is_complex(value_aval.dtype):
      raise TypeError("grad requires real-valued outputs (output dtype that is a sub-dtype of "
                      f"np.floating), but got {value_aval.dtype}. For holomorphic functions, pass "
                      "holomorphic=True.")
    elif not dtypes.is_float(value_aval.dtype):
      raise TypeError("grad requires real-valued outputs (output dtype that is a sub-dtype of "
                      f"np.floating), but got {value_aval.dtype}")
    # A weakly typed output gets a weakly typed seed (JAX's ``full_like(ans, 1)``), so the
    # gradients of weakly typed inputs stay weak.
    one = np.ones((), value_aval.dtype)
    if dtypes.canonicalize_dtype(one.dtype) != one.dtype:
      # A 64-bit output made inside ``enable_x64()`` while x64 is off here: its seed keeps
      # that type (the cotangent must match the output's).
      seed = put_exact(one, weak_type=value_aval.weak_type)
    elif value_aval.weak_type:
      # A Python number where one has the type: traced, a literal (as JAX's seed), not a
      # device constant.
      py = one.item()
      seed = py if dtypes.python_scalar_dtype(py) == one.dtype else device_put(
          one, weak_type=True)
    else:
      seed = one[()]
    grads = f_vjp(seed)
    g = grads[0] if single else tuple(grads)
    return ((value, aux), g) if has_aux else (value, g)

  return api_boundary(value_and_grad_f)


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()):
  """The gradient of scalar-valued ``fun`` with respect to argument(s) ``argnums``.

  The returned function runs ``fun`` forward, recording a linearization, and then transposes
  it (reverse mode), so one call costs a small multiple of ``fun``. ``fun`` must return a real
  scalar (shape ``()``, floating dtype), else TypeError. Differentiated arguments must be
  floating (or complex with ``holomorphic``); integer or bool ones raise TypeError unless
  ``allow_int``, which gives them float0 gradients. Each gradient has the structure, shape and
  dtype of its argument (weak types kept). ``grad`` composes with ``jit``, ``vmap`` and itself
  (``grad(grad(f))`` for second derivatives).

  Args:
    fun: function to differentiate; its arguments at ``argnums`` are pytrees of arrays.
    argnums: int or tuple of ints: which positional arguments to differentiate with respect
      to (an int gives one gradient, a tuple a tuple of gradients).
    has_aux: if True, ``fun`` returns ``(output, aux)`` and only ``output`` is differentiated;
      ``aux`` is returned alongside the gradient.
    holomorphic: if True, ``fun`` is holomorphic and complex inputs are allowed.
    allow_int: if True, integer arguments are allowed and get float0 gradients.
    reduce_axes: accepted for compatibility; ignored.

  Returns:
    A function with ``fun``'s arguments returning the gradient (``(gradient, aux)`` under
    ``has_aux``).

  Examples:
    >>> hlox.grad(lambda x: jnp.sum(x ** 2))(jnp.array([1., 2.]))
    Array([2., 4.], dtype=float32)
    >>> hlox.grad(lambda x, y: x * y, argnums=(0, 1))(2., 3.)
    (Array(3., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))
    >>> hlox.grad(lambda x: (x ** 2, x), has_aux=True)(3.)
    (Array(6., dtype=float32, weak_type=True), Array(3., dtype=float32, weak_type=True))

  See also:
    :func:`hlox.value_and_grad`, :func:`hlox.vjp`, :func:`hlox.jacrev`.
  """
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @wraps(fun)
  def grad_f(*args, **kwargs):
    if has_aux:
      (_, aux), g = vg(*args, **kwargs)
      return g, aux
    _, g = vg(*args, **kwargs)
    return g

  return api_boundary(grad_f)


def _basis(aval, e):
  """The ``e``-th unit array of ``aval``'s shape and dtype (host value)."""
  basis = np.zeros(aval.size, aval.dtype)
  basis[e] = 1
  return basis.reshape(aval.shape)


def _assemble(out_leaves, out_tree, in_leaves, in_tree, block):
  """JAX's Jacobian layout: the output tree whose every leaf is an input tree of arrays of
  shape ``out.shape + in.shape``; ``block(j, k)`` gives that array for out leaf j, in leaf k."""
  return tree_util.tree_unflatten(out_tree, [
      tree_util.tree_unflatten(in_tree, [block(j, k) for k in range(len(in_leaves))])
      for j in range(len(out_leaves))])


def _partial(fun, args, kwargs, nums, single):
  """``fun`` as a function of the differentiated arguments only (one tree)."""
  def partial_fun(dyn):
    full = list(args)
    for i, d in zip(nums, (dyn,) if single else dyn):
      full[i] = d
    return fun(*full, **kwargs)
  return partial_fun


def _std_basis(avals):
  """For flat values of ``avals`` (N elements in all), one array per value of shape
  ``(N, *aval.shape)``: together, the N unit vectors of the flattened values.

  Built with lax operations, as JAX builds it (an identity of iotas, split per value): under
  jit the basis is then computed in the program rather than passed in as a constant, so XLA
  sees its values and simplifies the products with it as it does for JAX, which keeps the
  last bits of jitted Jacobians equal to JAX's."""
  sizes = [a.size for a in avals]
  total = sum(sizes)
  dtype, _ = dtypes.result_type_with_weak([(a.dtype, a.weak_type) for a in avals])
  shape = (total, total)
  rows, cols = lax.broadcasted_iota(np.int32, shape, 0), lax.broadcasted_iota(np.int32, shape, 1)
  eye = lax.convert_element_type_p.bind(lax.eq(lax.add(rows, np.int32(0)), cols),
                                        new_dtype=dtype, weak_type=False)
  out = []
  for part, a in zip(lax.split(eye, sizes, axis=1), avals):
    if part.shape != (total,) + a.shape:
      part = lax.reshape(part, (total,) + a.shape)
    out.append(lax.convert_element_type_p.bind(part, new_dtype=a.dtype, weak_type=a.weak_type))
  return out, sizes


def _to_last_axis(x):
  """``x`` with its leading axis moved to the end."""
  ndim = get_aval(x).ndim
  return lax.transpose(x, tuple(range(1, ndim)) + (0,))


def _offsets(sizes):
  return np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()


def _possible_downcast(x, example_aval):
  """A Jacobian block in the dtype and weak type of ``example_aval`` (as JAX: the output's
  for jacfwd, the input's for jacrev); a complex block of a real example keeps its real part."""
  aval = get_aval(x)
  if dtypes.is_complex(aval.dtype) and not dtypes.is_complex(example_aval.dtype):
    x = lax.real(x)
    aval = get_aval(x)
  if aval.dtype == example_aval.dtype and aval.weak_type == example_aval.weak_type:
    return x
  return lax.convert_element_type_p.bind(x, new_dtype=example_aval.dtype,
                                     weak_type=example_aval.weak_type)


def _zeros_block(shape, example_aval):
  """The block of an integer output (jacfwd) or input (jacrev): zeros of that dtype, as JAX
  casts its float0 block to the example's dtype."""
  return _possible_downcast(lax.full(shape, 0, example_aval.dtype), example_aval)


def _check_jacfwd_input(holomorphic, leaf):
  dtype = get_aval(leaf).dtype
  if holomorphic and not dtypes.is_complex(dtype):
    raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, "
                    f"but got {np.dtype(dtype).name}.")
  if not holomorphic and not dtypes.is_float(dtype):
    raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype "
                    f"of np.floating), but got {np.dtype(dtype).name}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex inputs or integer "
                    "inputs, use jax.jvp directly.")


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """Jacobian of ``fun`` by forward mode: a JVP per input element, vectorized with vmap.

  Efficient when there are fewer inputs than outputs. For an output of shape ``out`` and a
  differentiated argument of shape ``in`` the Jacobian has shape ``out + in``; with pytrees,
  a pytree of such blocks. Differentiated arguments must be floating (complex with
  ``holomorphic``), else TypeError.

  Args:
    fun: function to differentiate.
    argnums: int or tuple of ints: the positional arguments to differentiate with respect to.
    has_aux: if True, ``fun`` returns ``(output, aux)``; ``aux`` is returned alongside.
    holomorphic: if True, ``fun`` is holomorphic and complex inputs are allowed.

  Returns:
    A function returning the Jacobian (``(jacobian, aux)`` under ``has_aux``).

  Examples:
    >>> hlox.jacfwd(lambda x: x ** 2)(jnp.array([1., 2.]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)

  See also:
    :func:`hlox.jacrev`, :func:`hlox.jvp`.
  """
  # fun's signature (jit's static_argnames look at it), not its attributes (a jit's lower).
  @wraps(fun, updated=())
  def jac_f(*args, **kwargs):
    single, nums = _normalize_argnums(argnums, len(args), "jacfwd")
    dyn = args[nums[0]] if single else tuple(args[i] for i in nums)
    _map_input_checks(functools.partial(_check_jacfwd_input, holomorphic), dyn)
    partial_fun = _partial(fun, args, kwargs, nums, single)
    in_leaves, in_tree = tree_util.tree_flatten(dyn)
    in_avals = [get_aval(x) for x in in_leaves]
    basis, in_sizes = _std_basis(in_avals)
    box = {}

    def pushfwd(*tangent_leaves):
      res = jvp(partial_fun, (dyn,), (tree_util.tree_unflatten(in_tree, tangent_leaves),),
                has_aux=has_aux)
      y_leaves, box["out_tree"] = tree_util.tree_flatten(res[0])
      box["out_avals"] = [get_aval(y) for y in y_leaves]
      # Tangents of integer outputs are float0 zeros: made outside the vmap.
      t_leaves = [t for t, y in zip(tree_util.tree_leaves(res[1]), box["out_avals"])
                  if dtypes.is_inexact(y.dtype)]
      return y_leaves, t_leaves, (res[2] if has_aux else None)

    y_leaves, columns, aux = vmap(pushfwd, out_axes=(None, 0, None))(*basis)
    out_tree, out_avals = box["out_tree"], box["out_avals"]
    for a in out_avals:
      if holomorphic and not dtypes.is_complex(a.dtype):
        raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, "
                        f"but got {np.dtype(a.dtype).name}.")
    offsets = _offsets(in_sizes)
    col = iter(columns)
    columns = [next(col) if dtypes.is_inexact(a.dtype) else None for a in out_avals]

    def block(j, k):
      o_aval, i_aval = out_avals[j], in_avals[k]
      if columns[j] is None:
        return _zeros_block(o_aval.shape + i_aval.shape, o_aval)
      rows = lax.slice_in_dim(columns[j], offsets[k], offsets[k + 1])  # (n_k, *o_shape)
      rows = _to_last_axis(rows)                                        # (*o_shape, n_k)
      return _possible_downcast(lax.reshape(rows, o_aval.shape + i_aval.shape), o_aval)

    result = _assemble(y_leaves, out_tree, in_leaves, in_tree, block)
    return (result, aux) if has_aux else result

  return api_boundary(jac_f)


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
  """Jacobian of ``fun`` by reverse mode: a VJP per output element, vectorized with vmap.

  Efficient when there are fewer outputs than inputs. For an output of shape ``out`` and a
  differentiated argument of shape ``in`` the Jacobian has shape ``out + in``; with pytrees,
  a pytree of such blocks. Integer arguments raise TypeError unless ``allow_int``.
  ``hlox.jacobian`` is this function.

  Args:
    fun: function to differentiate.
    argnums: int or tuple of ints: the positional arguments to differentiate with respect to.
    has_aux: if True, ``fun`` returns ``(output, aux)``; ``aux`` is returned alongside.
    holomorphic: if True, ``fun`` is holomorphic and complex inputs are allowed.
    allow_int: if True, integer arguments are allowed (float0 Jacobian blocks).

  Returns:
    A function returning the Jacobian (``(jacobian, aux)`` under ``has_aux``).

  Examples:
    >>> hlox.jacrev(lambda x: jnp.sin(x) * 2)(jnp.array([0., 1.]))
    Array([[2.       , 0.       ],
           [0.       , 1.0806046]], dtype=float32)

  See also:
    :func:`hlox.jacfwd`, :func:`hlox.vjp`.
  """
  # fun's signature (jit's static_argnames look at it), not its attributes (a jit's lower).
  @wraps(fun, updated=())
  def jac_f(*args, **kwargs):
    single, nums = _normalize_argnums(argnums, len(args), "jacrev")
    dyn = args[nums[0]] if single else tuple(args[i] for i in nums)
    for i in nums:
      _check_input_dtypes("jacrev", args[i], i, holomorphic, allow_int)
    _map_input_checks(lambda leaf: None, dyn)
    res = vjp(_partial(fun, args, kwargs, nums, single), dyn, has_aux=has_aux)
    out, f_vjp = res[0], res[1]
    out_leaves, out_tree = tree_util.tree_flatten(out)
    in_leaves, in_tree = tree_util.tree_flatten(dyn)
    out_avals = [get_aval(o) for o in out_leaves]
    in_avals = [get_aval(x) for x in in_leaves]
    for a in out_avals:
      name = np.dtype(a.dtype).name
      if holomorphic:
        if not dtypes.is_complex(a.dtype):
          raise TypeError("jacrev with holomorphic=True requires outputs with complex dtype, "
                          f"but got {name}.")
      elif dtypes.is_complex(a.dtype):
        raise TypeError("jacrev requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {name}. For holomorphic differentiation, "
                        "pass holomorphic=True. For differentiation of non-holomorphic "
                        "functions involving complex outputs, use jax.vjp directly.")
      elif not dtypes.is_float(a.dtype):
        raise TypeError("jacrev requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {name}. For differentiation of functions "
                        "with integer outputs, use jax.vjp directly.")
    basis, out_sizes = _std_basis(out_avals)
    inexact_in = [dtypes.is_inexact(a.dtype) for a in in_avals]

    def pullback(*ct_leaves):
      ct_in, = f_vjp(tree_util.tree_unflatten(out_tree, ct_leaves))
      # Cotangents of integer inputs (allow_int) are float0 zeros: made outside the vmap.
      return [c for c, nz in zip(tree_util.tree_leaves(ct_in), inexact_in) if nz]

    rows = iter(vmap(pullback)(*basis))  # per inexact input leaf: (N_out, *in.shape)
    rows = [next(rows) if nz else None for nz in inexact_in]
    offsets = _offsets(out_sizes)

    def block(j, k):
      o_shape, i_aval = out_avals[j].shape, in_avals[k]
      if rows[k] is None:
        return _zeros_block(o_shape + i_aval.shape, i_aval)
      return _possible_downcast(
          lax.reshape(lax.slice_in_dim(rows[k], offsets[j], offsets[j + 1]),
                      o_shape + i_aval.shape), i_aval)

    result = _assemble(out_leaves, out_tree, in_leaves, in_tree, block)
    return (result, res[2]) if has_aux else result

  return api_boundary(jac_f)


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Hessian (matrix of second derivatives) of scalar-valued ``fun``.

  Computed forward-over-reverse, as ``jacfwd(jacrev(fun))``. For an argument of shape ``in``
  the Hessian has shape ``in + in``.

  Args:
    fun: function with a scalar output to differentiate twice.
    argnums: int or tuple of ints: the positional arguments to differentiate with respect to.
    has_aux: if True, ``fun`` returns ``(output, aux)``; ``aux`` is returned alongside.
    holomorphic: if True, ``fun`` is holomorphic and complex inputs are allowed.

  Returns:
    A function returning the Hessian (``(hessian, aux)`` under ``has_aux``).

  Examples:
    >>> hlox.hessian(lambda x: jnp.sum(x ** 3))(jnp.array([1., 2.]))
    Array([[ 6.,  0.],
           [ 0., 12.]], dtype=float32)
  """
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)


jacobian = jacrev  # JAX's alias


def linear_transpose(fun: Callable, *primals, reduce_axes=()):
  """The transpose of the linear function ``fun``.

  ``fun`` must be linear in its arguments (a nonlinear primitive raises when transposed). Only
  the shapes and dtypes of ``primals`` matter: they may be arrays, ``ShapeDtypeStruct`` or
  anything with ``shape`` and ``dtype``. ``fun`` maps floats to floats (or complex) or
  integers to integers. The result is a ``Partial``, so it can cross ``jit``.

  Args:
    fun: a linear function.
    *primals: example arguments of ``fun`` (only shapes and dtypes are used).
    reduce_axes: accepted for compatibility; ignored.

  Returns:
    A function ``f_t(out_cotangent)`` returning a tuple with one input cotangent per primal.

  Examples:
    >>> f_t = hlox.linear_transpose(lambda x: 2 * x, 1.)
    >>> f_t(1.)
    (Array(2., dtype=float32, weak_type=True),)
  """
  del reduce_axes  # JAX's deprecated argument, accepted and ignored as JAX does
  leaves, in_tree = tree_util.tree_flatten(primals)
  in_avals = [abstractify_spec(x) for x in leaves]
  flat, box = _flat_fun(fun, in_tree)
  closed = trace_to_jaxpr(flat, in_avals, debug_info=_fun_name(fun),
                          trace_name="linear_transpose")
  out_avals = closed.out_avals
  in_dtypes = [a.dtype for a in in_avals]
  out_dtypes = [a.dtype for a in out_avals]
  if not (all(dtypes.is_inexact(d) for d in in_dtypes + out_dtypes)
          or all(dtypes.is_int(d) for d in in_dtypes + out_dtypes)):
    raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], "
                    f"and integer -> integer functions, but got {in_dtypes} -> {out_dtypes}.")
  info = (closed.jaxpr, in_tree, box["out_tree"], tuple(in_avals), tuple(out_avals))
  return tree_util.Partial(functools.partial(_transposed, info), list(closed.consts))


def _transposed(info, consts, out_cotangent):
  jaxpr, in_tree, out_tree, in_avals, out_avals = info
  ct_leaves, ct_tree = tree_util.tree_flatten(out_cotangent)
  if ct_tree != out_tree:
    raise TypeError("cotangent tree does not match function output, expected "
                    f"{out_tree} but got {ct_tree}")
  for c, a in zip(ct_leaves, out_avals):
    c_aval = get_aval(c)
    if (c_aval.shape, c_aval.dtype) != (a.shape, a.dtype):
      raise TypeError("cotangent type does not match function output, expected "
                      f"{a.str_short()} but got {c_aval.str_short()}")
  cts = ad.backward_pass(jaxpr, list(consts), [ad.UndefinedPrimal(a) for a in in_avals],
                         ct_leaves, transform_stack=True)
  result = [lax.full(a.shape, 0, a.dtype) if type(ct) is ad.Zero else ct
            for ct, a in zip(cts, in_avals)]
  return tuple(tree_util.tree_unflatten(in_tree, result))

"""User-facing autodiff transformations: jvp, linearize, vjp, grad, value_and_grad, jacfwd,
jacrev, hessian. Argument handling only; the machinery is in ``interpreters/ad.py``."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from hlox import tree_util
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.tracer import get_aval
from hlox.interpreters import ad

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian"]


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
        raise TypeError(f"{_fun_name(fun)} with has_aux=True must return a pair (output, aux), "
                        f"got {type(out).__name__}")
      out, aux = out
      box["aux"] = aux
    out_leaves, out_tree = tree_util.tree_flatten(out)
    box["out_tree"] = out_tree
    return out_leaves
  return flat, box


def _check_arraylike_leaves(name, leaves):
  for x in leaves:
    get_aval(x)  # raises a TypeError naming the type for non-arrays


def _zeros_tangent(aval):
  return ad.zeros_like_aval(aval.to_tangent_aval())


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
  """Forward mode: ``(fun(*primals), J(primals) @ tangents)``.

  ``primals`` and ``tangents`` are tuples (or lists) of the same structure; tangents of
  integer/boolean primals are float0.
  """
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("jvp: primals and tangents must be tuples or lists of arguments, got "
                    f"{type(primals).__name__} and {type(tangents).__name__}")
  p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
  t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
  if p_tree != t_tree:
    raise ValueError(f"jvp: primal and tangent arguments must have equal structure; primals "
                     f"{p_tree}, tangents {t_tree}")
  tangents_in = []
  for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
    p_aval, t_aval = get_aval(p), get_aval(t)
    expected = p_aval.to_tangent_aval()
    if t_aval.shape != p_aval.shape:
      raise ValueError(f"jvp: primal and tangent shapes differ for argument leaf {i}: "
                       f"{p_aval.str_short()} vs {t_aval.str_short()}")
    if t_aval.dtype != expected.dtype:
      raise TypeError(f"jvp: primal {p_aval.str_short()} needs a tangent of dtype "
                      f"{expected.dtype}, got {t_aval.dtype}")
    tangents_in.append(ad.Zero(expected) if expected.dtype == dtypes.float0 else t)
  flat, box = _flat_fun(fun, p_tree, has_aux)
  out_p, out_t = ad.jvp(flat, p_leaves, tangents_in)
  out_t = [ad.instantiate_zeros(t) for t in out_t]
  out_tree = box["out_tree"]
  result = (tree_util.tree_unflatten(out_tree, out_p), tree_util.tree_unflatten(out_tree, out_t))
  return (*result, box["aux"]) if has_aux else result


def linearize(fun: Callable, *primals, has_aux: bool = False):
  """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the JVP's linear part
  (computed once, at ``primals``)."""
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  flat, box = _flat_fun(fun, p_tree, has_aux)
  nonzeros = [dtypes.is_inexact(get_aval(p).dtype) for p in p_leaves]
  out_p, lin = ad.linearize(flat, p_leaves, nonzeros)
  out_tree = box["out_tree"]

  def f_jvp(*tangents):
    t_leaves, t_tree = tree_util.tree_flatten(tangents)
    if t_tree != p_tree:
      raise ValueError(f"linearized function called with tangent structure {t_tree}, "
                       f"expected {p_tree}")
    outs = lin(*[t for t, nz in zip(t_leaves, nonzeros) if nz])
    return tree_util.tree_unflatten(out_tree, [ad.instantiate_zeros(t) for t in outs])

  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, f_jvp, box["aux"]) if has_aux else (out, f_jvp)


def vjp(fun: Callable, *primals, has_aux: bool = False):
  """``(fun(*primals), f_vjp)`` where ``f_vjp(cotangent)`` returns one cotangent per primal."""
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  _check_arraylike_leaves("vjp", p_leaves)
  flat, box = _flat_fun(fun, p_tree, has_aux)
  nonzeros = [dtypes.is_inexact(get_aval(p).dtype) for p in p_leaves]
  out_p, lin = ad.linearize(flat, p_leaves, nonzeros)
  out_tree = box["out_tree"]
  out_avals = [get_aval(o) for o in out_p]
  in_avals = [get_aval(p) for p in p_leaves]

  def f_vjp(ct):
    ct_leaves, ct_tree = tree_util.tree_flatten(ct)
    if ct_tree != out_tree:
      raise ValueError(f"vjp: cotangent has structure {ct_tree}, but the function's output "
                       f"has structure {out_tree}")
    for c, a in zip(ct_leaves, out_avals):
      c_aval = get_aval(c)
      if c_aval.shape != a.shape:
        raise ValueError(f"vjp: cotangent of shape {c_aval.shape} for an output of shape "
                         f"{a.shape}")
    cts_in = iter(lin.transpose(ct_leaves))
    result = [ad.instantiate_zeros(next(cts_in)) if nz else _zeros_tangent(a)
              for a, nz in zip(in_avals, nonzeros)]
    return tuple(tree_util.tree_unflatten(p_tree, result))

  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, f_vjp, box["aux"]) if has_aux else (out, f_vjp)


def _normalize_argnums(argnums, nargs, name):
  single = isinstance(argnums, int)
  nums = (argnums,) if single else tuple(argnums)
  for i in nums:
    if not isinstance(i, (int, np.integer)):
      raise TypeError(f"{name}: argnums must be ints, got {argnums!r}")
    if not -nargs <= i < nargs:
      raise ValueError(f"{name}: argnums {argnums} out of range for a function called with "
                       f"{nargs} positional arguments")
  return single, tuple(int(i) % nargs for i in nums)


def _check_input_dtypes(name, x, argnum, holomorphic, allow_int):
  for leaf in tree_util.tree_leaves(x):
    dtype = get_aval(leaf).dtype
    if holomorphic:
      if not dtypes.is_complex(dtype):
        raise TypeError(f"{name} with holomorphic=True requires complex inputs; argument "
                        f"{argnum} has dtype {dtype}")
    elif not dtypes.is_inexact(dtype) and not allow_int:
      raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                      f"sub-dtype of np.inexact), but argument {argnum} has dtype {dtype}. "
                      "Pass allow_int=True to differentiate with respect to it (its gradient "
                      "is float0), or convert it to a float.")


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes=()):
  """A function returning ``(fun(*args), gradient of fun at args)`` for scalar ``fun``."""
  name = "value_and_grad" if not getattr(fun, "_hlox_grad", False) else "grad"

  @functools.wraps(fun)
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
                      f"np.floating), got {value_aval.dtype}. For holomorphic functions, pass "
                      "holomorphic=True.")
    elif not dtypes.is_float(value_aval.dtype):
      raise TypeError("grad requires real-valued outputs (output dtype that is a sub-dtype of "
                      f"np.floating), got {value_aval.dtype}")
    grads = f_vjp(np.ones((), value_aval.dtype)[()])
    g = grads[0] if single else tuple(grads)
    return ((value, aux), g) if has_aux else (value, g)

  return value_and_grad_f


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()):
  """The gradient of scalar-valued ``fun`` with respect to argument(s) ``argnums``."""
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @functools.wraps(fun)
  def grad_f(*args, **kwargs):
    if has_aux:
      (_, aux), g = vg(*args, **kwargs)
      return g, aux
    _, g = vg(*args, **kwargs)
    return g

  return grad_f


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
  ``(N, *aval.shape)``: together, the N unit vectors of the flattened values."""
  sizes = [a.size for a in avals]
  total = sum(sizes)
  eye = np.eye(total)
  out, offset = [], 0
  for a, n in zip(avals, sizes):
    out.append(eye[:, offset:offset + n].reshape((total,) + a.shape).astype(a.dtype))
    offset += n
  return out, sizes


def _offsets(sizes):
  return np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """Jacobian of ``fun`` by forward mode: a JVP per input element, vectorized with vmap."""
  import hlox.numpy as jnp
  from hlox.api import vmap

  def jac_f(*args, **kwargs):
    single, nums = _normalize_argnums(argnums, len(args), "jacfwd")
    for i in nums:
      _check_input_dtypes("jacfwd", args[i], i, holomorphic, False)
    dyn = args[nums[0]] if single else tuple(args[i] for i in nums)
    partial_fun = _partial(fun, args, kwargs, nums, single)
    in_leaves, in_tree = tree_util.tree_flatten(dyn)
    in_avals = [get_aval(x) for x in in_leaves]
    basis, in_sizes = _std_basis(in_avals)

    def pushfwd(*tangent_leaves):
      res = jvp(partial_fun, (dyn,), (tree_util.tree_unflatten(in_tree, tangent_leaves),),
                has_aux=has_aux)
      return tree_util.tree_leaves(res[1])

    columns = vmap(pushfwd)(*basis)  # per output leaf: (N_in, *out.shape)
    res = partial_fun(dyn)
    out, aux = res if has_aux else (res, None)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    offsets = _offsets(in_sizes)

    def block(j, k):
      o_shape, i_aval = get_aval(out_leaves[j]).shape, in_avals[k]
      rows = columns[j][offsets[k]:offsets[k + 1]]           # (n_k, *o_shape)
      rows = jnp.moveaxis(rows, 0, -1)                        # (*o_shape, n_k)
      return jnp.reshape(rows, o_shape + i_aval.shape)

    result = _assemble(out_leaves, out_tree, in_leaves, in_tree, block)
    return (result, aux) if has_aux else result

  return jac_f


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
  """Jacobian of ``fun`` by reverse mode: a VJP per output element, vectorized with vmap."""
  import hlox.numpy as jnp
  from hlox.api import vmap

  def jac_f(*args, **kwargs):
    single, nums = _normalize_argnums(argnums, len(args), "jacrev")
    for i in nums:
      _check_input_dtypes("jacrev", args[i], i, holomorphic, allow_int)
    dyn = args[nums[0]] if single else tuple(args[i] for i in nums)
    res = vjp(_partial(fun, args, kwargs, nums, single), dyn, has_aux=has_aux)
    out, f_vjp = res[0], res[1]
    out_leaves, out_tree = tree_util.tree_flatten(out)
    in_leaves, in_tree = tree_util.tree_flatten(dyn)
    out_avals = [get_aval(o) for o in out_leaves]
    basis, out_sizes = _std_basis(out_avals)

    def pullback(*ct_leaves):
      ct_in, = f_vjp(tree_util.tree_unflatten(out_tree, ct_leaves))
      return tree_util.tree_leaves(ct_in)

    rows = vmap(pullback)(*basis)  # per input leaf: (N_out, *in.shape)
    offsets = _offsets(out_sizes)

    def block(j, k):
      o_shape, i_shape = out_avals[j].shape, get_aval(in_leaves[k]).shape
      return jnp.reshape(rows[k][offsets[j]:offsets[j + 1]], o_shape + i_shape)

    result = _assemble(out_leaves, out_tree, in_leaves, in_tree, block)
    return (result, res[2]) if has_aux else result

  return jac_f


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Hessian of scalar ``fun``: forward-over-reverse (``jacfwd(jacrev(fun))``)."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)

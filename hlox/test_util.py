"""``hlox.test_util``: numerical checks of derivatives (JAX's ``jax.test_util``).

``check_jvp`` compares a JVP with central finite differences along one random direction;
``check_vjp`` checks that a VJP is the transpose of the (numerical) JVP through the identity
``<J t, c> == <t, J^T c>``; ``check_grads`` runs them in the requested modes ('fwd', 'rev',
'lin') and recurses on the derivative functions up to ``order``. Tolerances are absolute and
relative, per dtype unless given (a number, or a dict from dtype to number), scaled by the
number of elements compared, as in JAX. Use float64 (``hlox.config.enable_x64()``) for
tight checks.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox import autodiff
from hlox.core import dtypes
from hlox._tree_transform import tree_leaves, tree_map, tree_structure

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4

# Values compared exactly (integers, bools) get 0; the rest are finite-difference tolerances.
_gradient_tolerance = {
    np.dtype(dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
    **{np.dtype(d): 1e-1 for d in dtypes.float8_dtypes},
}


def _dtype(x) -> np.dtype:
  if hasattr(x, "dtype"):
    return np.dtype(x.dtype)
  if dtypes.is_python_scalar(x):
    return dtypes.python_scalar_dtype(x)
  return np.asarray(x).dtype


def _is_python_scalar(x) -> bool:
  return not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))


def _tolerance(dtype, tol) -> float:
  if not isinstance(tol, dict):
    return tol
  dtype = dtypes.canonicalize_dtype(dtype)
  return tol.get(dtype, _gradient_tolerance.get(dtype, 0))


def _merge_tolerance(tol):
  if tol is None:
    return dict(_gradient_tolerance)
  if isinstance(tol, dict):
    return {**_gradient_tolerance, **{np.dtype(k): v for k, v in tol.items()}}
  return tol


def _as_numpy(x):
  x = np.asarray(x)
  # Compare the ml_dtypes floats in float32: NumPy's allclose does not know them.
  if x.dtype in dtypes._custom_floats:
    return x.astype(np.float32)
  return x


def _assert_close(x, y, atol, rtol, err_msg):
  x, y = _as_numpy(x), _as_numpy(y)
  if x.shape != y.shape:
    raise AssertionError(f"{err_msg}: shapes differ, {x.shape} vs {y.shape}")
  if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
    return
  atol = max(_tolerance(x.dtype, atol), _tolerance(y.dtype, atol)) * max(x.size, 1)
  rtol = max(_tolerance(x.dtype, rtol), _tolerance(y.dtype, rtol)) * max(y.size, 1)
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, err_msg=err_msg)


def _check_close(xs, ys, atol, rtol, err_msg):
  if tree_structure(xs) != tree_structure(ys):
    raise AssertionError(f"{err_msg}: tree structures differ, {tree_structure(xs)} vs "
                         f"{tree_structure(ys)}")
  for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
    _assert_close(x, y, atol, rtol, err_msg)


def _check_dtypes_match(xs, ys, err_msg):
  for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
    dx, dy = dtypes.canonicalize_dtype(_dtype(x)), dtypes.canonicalize_dtype(_dtype(y))
    if dx != dy:
      raise AssertionError(f"{err_msg}: dtypes differ, {dx} vs {dy}")


def _keep_type(x, value):
  """``value`` as an array of ``x``'s dtype, or a Python scalar when ``x`` is one."""
  value = np.asarray(value, dtype=_dtype(x))
  return value.item() if _is_python_scalar(x) else value


def _axpy(a, xs, ys):
  return tree_map(lambda x, y: _keep_type(x, np.asarray(x) + a * np.asarray(y)), xs, ys)


def _rand_like(rng, x):
  dtype, shape = _dtype(x), np.shape(x)
  value = rng.randn(*shape)
  if dtypes.is_complex(dtype):
    value = value + 1j * rng.randn(*shape)
  return _keep_type(x, value)


def _directions():
  # The random directions JAX's checks draw (a legacy NumPy generator seeded 0), so that a
  # check that passes there passes here: finite differences in float32 of a stiff function
  # (chex's tests) are close enough along some directions and not along others.
  return np.random.RandomState(0)


def _numerical_jvp(f, primals, tangents, eps):
  plus = f(*_axpy(eps, primals, tangents))
  minus = f(*_axpy(-eps, primals, tangents))

  def diff(p, m):
    p, m = np.asarray(p), np.asarray(m)
    # inf - inf is 0 here: the function did not move.
    with np.errstate(invalid="ignore"):
      d = np.where(p == m, np.zeros((), p.dtype), p - m)
    return _keep_type(p, d * (0.5 / eps))
  return tree_map(diff, plus, minus)


def _inner(xs, ys):
  total = 0.0
  for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
      continue
    total += np.real(np.vdot(_as_numpy(x).ravel(), _as_numpy(y).ravel()))
  return np.asarray(total)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check ``f_jvp(primals, tangents) -> (out, tangent_out)`` (typically
  ``functools.partial(hlox.jvp, f)``) at ``args`` against central finite differences of
  ``f`` along one random direction; ``AssertionError`` when they differ."""
  atol, rtol = _merge_tolerance(atol), _merge_tolerance(rtol)
  rng = _directions()
  tangents = tree_map(lambda x: _rand_like(rng, x), args)
  out, out_t = f_jvp(args, tangents)
  _check_dtypes_match(out, out_t, err_msg or "jvp")
  expected = f(*args)
  _check_dtypes_match(out, expected, err_msg or "jvp")
  _check_close(out, expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  numeric = _numerical_jvp(f, args, tangents, eps)
  _check_close(out_t, numeric, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check ``f_vjp(*args) -> (out, vjp_fun)`` (typically ``functools.partial(hlox.vjp, f)``)
  at ``args``: the VJP of a random cotangent, paired with a random tangent, must equal the
  cotangent paired with the finite-difference JVP; ``AssertionError`` otherwise."""
  atol, rtol = _merge_tolerance(atol), _merge_tolerance(rtol)
  rng = _directions()
  out, vjp_fun = f_vjp(*args)
  _check_close(out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  tangents = tree_map(lambda x: _rand_like(rng, x), args)
  tangents_out = _numerical_jvp(f, args, tangents, eps)
  cts = tree_map(lambda x: _rand_like(rng, x), out)
  # The VJP is the unconjugated transpose of the JVP: conjugate on the way in and out.
  cts_in = tree_map(np.conj, vjp_fun(tree_map(np.conj, cts)))
  _check_close(_inner(tangents, cts_in), _inner(tangents_out, cts), atol, rtol,
               f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def _jvp_from_linearize(f, primals, tangents):
  out, f_lin = autodiff.linearize(f, *primals)
  return out, f_lin(*tangents)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check the derivatives of ``f`` at ``args`` (a tuple) against finite differences, up to
  ``order``, in ``modes`` (any of 'fwd', 'rev', 'lin'); ``AssertionError`` when they differ.

  Higher orders check the JVP function (at ``(args, args)``) and the function
  ``x -> vjp(f, x)(f(x))`` in turn, as JAX does."""
  args = tuple(args)
  eps = eps or EPS
  unknown = set(modes) - {"fwd", "rev", "lin"}
  if unknown:
    raise ValueError(f"check_grads: unknown modes {sorted(unknown)}; expected 'fwd', 'rev' "
                     "or 'lin'")
  jvp = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
  vjp = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

  def recurse(f, args, order, err_msg=""):
    if "fwd" in modes:
      msg = f"JVP of {err_msg}" if err_msg else "JVP"
      jvp(f, functools.partial(autodiff.jvp, f), args, err_msg=msg)
      if order > 1:
        recurse(functools.partial(autodiff.jvp, f), (args, args), order - 1, msg)
    if "rev" in modes:
      msg = f"VJP of {err_msg}" if err_msg else "VJP"
      vjp(f, functools.partial(autodiff.vjp, f), args, err_msg=msg)
      if order > 1:
        def f_vjp(*primals):
          out, vjp_fun = autodiff.vjp(f, *primals)
          return vjp_fun(out)
        recurse(f_vjp, args, order - 1, msg)
    if "lin" in modes:
      msg = f"LIN of {err_msg}" if err_msg else "LIN"
      jvp(f, functools.partial(_jvp_from_linearize, f), args, err_msg=msg)
      if order > 1:
        recurse(functools.partial(_jvp_from_linearize, f), (args, args), order - 1, msg)

  recurse(f, args, order)

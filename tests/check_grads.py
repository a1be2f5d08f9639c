"""``check_grads``: numerical checks of JVPs and VJPs (as in JAX's test utilities).

Forward mode is compared with central finite differences, reverse mode with forward mode
through the dot-product identity ``<ct, J t> == <J^T ct, t>``; ``order > 1`` recurses on the
derivative functions. Run with x64 enabled (``hlox.config.enable_x64()``) for float64 accuracy.
"""
from __future__ import annotations

import numpy as np

import hlox
from hlox import tree_util

EPS = 1e-4


def _rand_like(rng, x):
  x = np.asarray(x)
  if x.dtype.kind == "c":
    return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
  return rng.standard_normal(x.shape).astype(x.dtype)


def _inner(xs, ys):
  total = 0.0
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    total += np.sum(np.conj(np.asarray(x, np.complex128)) * np.asarray(y, np.complex128)).real
  return total


def _add(xs, ys, scale):
  return tree_util.tree_map(lambda x, y: np.asarray(x) + scale * np.asarray(y), xs, ys)


def check_jvp(f, args, rng, atol, rtol, eps=EPS):
  tangents = tree_util.tree_map(lambda x: _rand_like(rng, x), args)
  out, out_t = hlox.jvp(f, args, tangents)
  plus = f(*_add(args, tangents, eps))
  minus = f(*_add(args, tangents, -eps))
  numeric = tree_util.tree_map(lambda p, m: (np.asarray(p, np.float64 if np.asarray(p).dtype.kind
                                                        != "c" else np.complex128)
                                             - np.asarray(m)) / (2 * eps), plus, minus)
  for a, b in zip(tree_util.tree_leaves(out_t), tree_util.tree_leaves(numeric)):
    np.testing.assert_allclose(np.asarray(a), b, atol=atol, rtol=rtol,
                               err_msg="JVP does not match finite differences")


def check_vjp(f, args, rng, atol, rtol):
  out, f_vjp = hlox.vjp(f, *args)
  tangents = tree_util.tree_map(lambda x: _rand_like(rng, x), args)
  _, out_t = hlox.jvp(f, args, tangents)
  cts = tree_util.tree_map(lambda x: _rand_like(rng, x), out)
  # JAX's convention: the VJP is the plain (unconjugated) transpose of the JVP, so the
  # identity holds with conjugated cotangents in and out (as in JAX's check_vjp).
  cts_in = tree_util.tree_map(np.conj, f_vjp(tree_util.tree_map(np.conj, cts)))
  lhs = _inner(cts, out_t)
  rhs = _inner(cts_in, tangents)
  np.testing.assert_allclose(lhs, rhs, atol=atol, rtol=rtol,
                             err_msg="VJP is not the transpose of the JVP")


def check_grads(f, args, order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5, eps=EPS,
                seed=0):
  """Check derivatives of ``f`` at ``args`` up to ``order`` in the given modes."""
  rng = np.random.default_rng(seed)
  args = tuple(args)
  if "fwd" in modes:
    check_jvp(f, args, rng, atol, rtol, eps)
  if "rev" in modes:
    check_vjp(f, args, rng, atol, rtol)
  if order > 1:
    if "fwd" in modes:
      direction = tree_util.tree_map(lambda x: _rand_like(np.random.default_rng(seed + 3), x),
                                     args)

      def f_jvp(*primals):
        return hlox.jvp(f, primals, direction)[1]
      check_grads(f_jvp, args, order - 1, ("fwd",), atol, rtol, eps, seed + 1)
    if "rev" in modes:
      out = f(*args)
      ct = tree_util.tree_map(lambda x: _rand_like(np.random.default_rng(seed + 7), x), out)

      def f_vjp(*primals):
        return hlox.vjp(f, *primals)[1](ct)
      check_grads(f_vjp, args, order - 1, ("rev",), atol, rtol, eps, seed + 1)


def check_grads_x64(f, args, order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6):
  """``check_grads`` in float64: x64 on, arguments as NumPy arrays."""
  from hlox.config import enable_x64
  with enable_x64():
    check_grads(f, tuple(np.asarray(a) for a in args), order, modes, atol, rtol)

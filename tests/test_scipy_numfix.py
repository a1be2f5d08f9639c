"""scipy fixes: logsumexp on complex input and with ``where`` under grad, betaln for huge
arguments, and the iterative solvers as custom_linear_solve (weak types, derivatives in the
matrix); against NumPy/SciPy."""
import numpy as np
import pytest
import scipy.special as osp_special

import hlox
import hlox.numpy as jnp
from hlox.core import dtypes
from hlox.scipy import special as lsp_special
from hlox.scipy.sparse import linalg as sp_linalg
from tests.util import assert_close


def test_logsumexp_complex_return_sign():
  x = np.array([1 + 1j, 2 - 1j, -2 + 3j], np.complex64)
  out, sign = lsp_special.logsumexp(x, return_sign=True)
  assert out.dtype == np.float32 and sign.dtype == np.complex64
  total = np.exp(x.astype(np.complex128)).sum()
  assert_close(out, np.log(abs(total)), np.float32, rtol=1e-6)
  assert_close(sign, total / abs(total), np.complex64, rtol=1e-6)
  # Without return_sign the result is the complex logarithm (SciPy's).
  plain = lsp_special.logsumexp(x)
  assert_close(plain, osp_special.logsumexp(x.astype(np.complex128)), np.complex64,
               rtol=1e-5)


def test_logsumexp_where_gradient_ignores_masked_entries():
  x = jnp.array([0., 0., 0., 0., 100.])
  g = hlox.grad(lambda x: lsp_special.logsumexp(x, where=jnp.arange(5) < 4))(x)
  assert_close(g, [0.25, 0.25, 0.25, 0.25, 0.], np.float32)
  assert_close(lsp_special.logsumexp(x, where=jnp.arange(5) < 4), np.log(4.), np.float32)


def test_logsumexp_negative_b_gives_nan_without_sign():
  a, b = np.array([1., 2.], np.float32), np.array([1., -3.], np.float32)
  assert np.isnan(lsp_special.logsumexp(a, b=b))
  out, sign = lsp_special.logsumexp(a, b=b, return_sign=True)
  ref, ref_sign = osp_special.logsumexp(a, b=b, return_sign=True)
  assert_close(out, ref, np.float32, rtol=1e-6)
  assert_close(sign, ref_sign, np.float32)


def test_betaln_large_arguments_and_derivative():
  xs = jnp.geomspace(1, 1e30, 200)
  out, tangent = hlox.jvp(lsp_special.betaln, (xs, 1.0), (jnp.ones_like(xs), 0.0))
  assert_close(out, -np.log(np.geomspace(1, 1e30, 200)), np.float32, atol=1e-5, rtol=0)
  assert_close(tangent, -1 / np.geomspace(1, 1e30, 200), np.float32, atol=1e-5, rtol=0)
  a = np.array([0.5, 3., 9., 20., 1e4], np.float32)
  b = np.array([7., 8.5, 30., 20., 2.5], np.float32)
  assert_close(lsp_special.betaln(a, b), osp_special.betaln(a, b), np.float32, rtol=2e-6)


@pytest.mark.parametrize("solver", [sp_linalg.cg, sp_linalg.bicgstab, sp_linalg.gmres])
def test_solvers_keep_weak_types(solver):
  x, _ = solver(lambda x: x, 1.0)
  assert dtypes.is_weakly_typed(x)
  assert_close(x, 1.0, np.float32)


def test_cg_gradient_in_the_matrix():
  rng = np.random.RandomState(0)
  a = (rng.randn(2, 2) + 1j * rng.randn(2, 2)).astype(np.complex64)
  b = (rng.randn(2) + 1j * rng.randn(2)).astype(np.complex64)
  posify = lambda m: m @ m.conj().T + 2 * jnp.eye(2)
  def solve(m, v):
    return sp_linalg.cg(posify(m), v)[0]
  ref = lambda m, v: jnp.linalg.solve(posify(m), v)
  assert_close(hlox.jit(solve)(a, b), ref(a, b), np.complex64, rtol=1e-5, atol=1e-5)
  da = (rng.randn(2, 2) + 1j * rng.randn(2, 2)).astype(np.complex64)
  _, t = hlox.jvp(solve, (a, b), (da, np.zeros_like(b)))
  _, t_ref = hlox.jvp(ref, (a, b), (da, np.zeros_like(b)))
  assert_close(t, t_ref, np.complex64, rtol=1e-4, atol=1e-4)
  loss = lambda f: (lambda m, v: jnp.sum(jnp.abs(f(m, v)) ** 2))
  g = hlox.grad(loss(solve), argnums=(0, 1))(a, b)
  g_ref = hlox.grad(loss(ref), argnums=(0, 1))(a, b)
  for x, y in zip(g, g_ref):
    assert_close(x, y, np.complex64, rtol=1e-4, atol=1e-4)

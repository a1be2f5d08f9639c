"""hlox.lax special functions (hlox/lax/special.py): igamma, igammac, igamma_grad_a,
random_gamma_grad, betainc, zeta, bessel_i0e, bessel_i1e against SciPy; jit, vmap, grad and
errors."""
import numpy as np
import pytest
import scipy.special as sp

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64

from tests.check_grads import check_grads
from tests.util import assert_close, check_eager_and_jit

# A grid over small, moderate and large shape parameters and arguments (both branches of
# the series / continued-fraction split and the large-a rewriting of the prefactor), then far
# tails (tiny P, tiny Q), then special values (zeros, infinities, NaN, the domain's edges).
# One vector, so each dtype compiles each function once.
_A = np.array([1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 19.9, 20.0, 50.0, 200.0, 1000.0, 1e4])
_X = np.array([1e-4, 0.01, 0.5, 1.0, 3.0, 10.0, 20.0, 50.0, 200.0, 1000.0, 1200.0, 1e4])
_TAILS_A = np.array([20.0, 50.0, 3.0, 5.0])
_TAILS_X = np.array([0.5, 10.0, 40.0, 60.0])
_SPECIAL_A = np.array([0., 0., 1., 2., -1., 2., np.nan, 2., np.inf, np.inf, 3.])
_SPECIAL_X = np.array([0., 0.5, 0., np.inf, 1., -1., 1., np.nan, 2., np.inf, 1e-30])
A = np.concatenate([np.repeat(_A, len(_X)), _TAILS_A, _SPECIAL_A])
X = np.concatenate([np.tile(_X, len(_A)), _TAILS_X, _SPECIAL_X])
_TAILS = slice(len(_A) * len(_X), len(_A) * len(_X) + len(_TAILS_A))

# float32: relative 1e-4 (the prefactor's exp loses ~eps * x), absolute 2e-6 (1 - P
# cancels when P is near 1, e.g. Q(0.001, 0.5) = 5.6e-4); float64: 1e-10 / 1e-14.
_TOL = {np.float32: dict(rtol=1e-4, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-14)}


def _in(dtype, *xs):
  return [np.asarray(x, dtype) for x in xs]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_igamma_igammac_match_scipy(dtype):
  with enable_x64():
    a, x = _in(dtype, A, X)
    ref_a, ref_x = a.astype(np.float64), x.astype(np.float64)
    p = check_eager_and_jit(lax.igamma, (a, x), sp.gammainc(ref_a, ref_x), dtype,
                            **_TOL[dtype])
    q = check_eager_and_jit(lax.igammac, (a, x), sp.gammaincc(ref_a, ref_x), dtype,
                            **_TOL[dtype])
  if dtype == np.float64:
    # In the far tails (P ~ 1e-25, Q ~ 1e-14) the relative accuracy holds.
    t = _TAILS
    np.testing.assert_allclose(np.asarray(p)[t][:2], sp.gammainc(A[t], X[t])[:2], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(q)[t][2:], sp.gammaincc(A[t], X[t])[2:],
                               rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_igamma_16_bit_floats_compute_in_float32(dtype):
  dtype = jnp.dtype(dtype)
  a, x = np.array([0.5, 2.0, 8.0]), np.array([0.3, 2.5, 6.0])
  a16, x16 = (lax.convert_element_type(np.float32(v), dtype) for v in (a, x))
  out = lax.igamma(a16, x16)
  assert out.dtype == dtype
  ref = sp.gammainc(np.asarray(a16, np.float64), np.asarray(x16, np.float64))
  np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=2e-2)


def _dp_da(a, x, h=1e-6):
  """Central differences of SciPy's P in a (of Q where P is near 1, to keep digits)."""
  h = h * a
  dp = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
  dq = -(sp.gammaincc(a + h, x) - sp.gammaincc(a - h, x)) / (2 * h)
  return np.where(sp.gammainc(a, x) < 0.5, dp, dq)


def _grad_grid():
  a, x = np.meshgrid(_A[:-1], _X[:-1], indexing="ij")
  a, x = a.ravel(), x.ravel()
  dp = _dp_da(a, x)
  density = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
  keep = (np.abs(dp) > 1e-200) & (density > 1e-200)  # finite differences need digits
  return a[keep], x[keep], dp[keep], -dp[keep] / density[keep]


def test_igamma_grad_a_and_random_gamma_grad_match_finite_differences():
  a, x, dp, dx = _grad_grid()
  with enable_x64():
    # The finite differences themselves carry ~1e-8 relative error.
    assert_close(lax.igamma_grad_a(a, x), dp, np.float64, rtol=1e-6, atol=1e-300)
    assert_close(lax.random_gamma_grad(a, x), dx, np.float64, rtol=1e-6, atol=1e-300)
  a32, x32 = _in(np.float32, a, x)
  assert_close(lax.igamma_grad_a(a32, x32), dp, np.float32, rtol=1e-3, atol=1e-6)
  assert_close(lax.random_gamma_grad(a32, x32), dx, np.float32, rtol=1e-3, atol=1e-6)


def test_random_gamma_grad_is_the_quantile_derivative():
  # x(a) = P^-1(a, u) at fixed u: d x / d a by differences of SciPy's inverse.
  a = np.array([0.05, 0.7, 3.0, 40.0])
  x = np.array([1e-5, 0.4, 4.5, 35.0])
  u = sp.gammainc(a, x)
  h = 1e-6 * a
  ref = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)
  with enable_x64():
    np.testing.assert_allclose(np.asarray(lax.random_gamma_grad(a, x)), ref, rtol=1e-6)


def test_grad_special_cases():
  nan = np.nan
  a = np.array([2.0, 2.0, -1.0, 0.0, nan], np.float32)
  x = np.array([0.0, 3.0, 1.0, 1.0, 1.0], np.float32)
  g = np.asarray(lax.random_gamma_grad(a, x))
  assert g[0] == 0 and np.isfinite(g[1]) and np.isnan(g[2:]).all()
  d = np.asarray(lax.igamma_grad_a(a, x))
  assert d[0] == 0 and np.isnan(d[2:]).all()


def test_igamma_jvp_and_grad():
  a, x = np.float32(2.5), np.float32(1.7)
  ga, gx = hlox.grad(lax.igamma, argnums=(0, 1))(a, x)
  density = np.exp(1.5 * np.log(1.7) - 1.7 - sp.gammaln(2.5))
  np.testing.assert_allclose(float(gx), density, rtol=1e-5)
  np.testing.assert_allclose(float(ga), _dp_da(2.5, 1.7), rtol=1e-4)
  gca, gcx = hlox.grad(lax.igammac, argnums=(0, 1))(a, x)
  np.testing.assert_allclose([float(gca), float(gcx)], [-float(ga), -float(gx)], rtol=1e-6)


def test_igamma_check_grads_float64():
  with enable_x64():
    a, x = np.array([0.6, 3.0, 12.0]), np.array([0.4, 5.0, 11.0])
    # Second order in x (the density is lax ops); first order in a (igamma_grad_a, like
    # JAX's, has no derivative of its own).
    check_grads(lambda x: lax.igamma(a, x), (x,), order=2, atol=1e-6, rtol=1e-6)
    check_grads(lambda x: lax.igammac(a, x), (x,), order=2, atol=1e-6, rtol=1e-6)
    check_grads(lambda a: lax.igamma(a, x), (a,), order=1, atol=1e-6, rtol=1e-6)
    check_grads(lambda a, x: lax.igammac(a, x), (a, x), order=1, atol=1e-6, rtol=1e-6)


def test_second_derivative_in_a_is_reported_missing():
  with pytest.raises(NotImplementedError, match="igamma_grad_a"):
    hlox.grad(hlox.grad(lax.igamma))(2.0, 1.0)
  with pytest.raises(NotImplementedError, match="random_gamma_grad"):
    hlox.grad(lambda a: lax.random_gamma_grad(a, 1.0))(2.0)


def test_vmap_matches_loop():
  a = np.array([[0.5, 2.0, 7.0], [1.0, 3.0, 30.0]], np.float32)
  x = np.array([0.3, 2.5, 6.0], np.float32)
  for fn in (lax.igamma, lax.random_gamma_grad):
    out = hlox.vmap(fn, in_axes=(0, None))(a, x)
    loop = np.stack([np.asarray(fn(a[i], x)) for i in range(2)])
    np.testing.assert_array_equal(np.asarray(out), loop)
  # Batch dimensions at different positions; under vmap of grad the JVP rules batch too.
  out = hlox.vmap(lax.igamma, in_axes=(1, 0))(a[:, :2], x[:2])
  np.testing.assert_allclose(np.asarray(out), sp.gammainc(a[:, :2].T, x[:2, None]), rtol=1e-5)
  ga, gx = hlox.vmap(hlox.grad(lax.igamma, argnums=(0, 1)))(a[0], x)
  np.testing.assert_allclose(np.asarray(ga), _dp_da(a[0].astype(np.float64), x), rtol=1e-4)
  density = np.exp((a[0] - 1.0) * np.log(x) - x - sp.gammaln(a[0]))
  np.testing.assert_allclose(np.asarray(gx), density, rtol=1e-5)


def test_broadcasting_and_weak_scalars():
  x = np.array([[0.5], [2.0]], np.float32)
  a = np.array([[1.0, 3.0, 9.0]], np.float32)
  out = lax.igamma(a, x)
  assert out.shape == (2, 3) and out.dtype == np.float32
  np.testing.assert_allclose(np.asarray(out), sp.gammainc(a, x), rtol=1e-5)
  out = lax.igammac(2.0, jnp.arange(1.0, 4.0))
  assert out.dtype == np.float32
  np.testing.assert_allclose(np.asarray(out), sp.gammaincc(2.0, [1.0, 2.0, 3.0]), rtol=1e-5)
  assert lax.igamma(2.0, 1.5).weak_type


def test_jaxpr_shows_the_primitives():
  text = str(hlox.make_jaxpr(lambda a, x: lax.igamma(a, x) + lax.random_gamma_grad(a, x))(
      1.0, 2.0))
  assert "igamma " in text and "random_gamma_grad" in text


def test_bad_input():
  with pytest.raises(TypeError, match="igamma does not accept dtype int32"):
    lax.igamma(np.int32(1), np.int32(2))
  with pytest.raises(TypeError, match="igammac requires arguments to have the same dtype"):
    with enable_x64():
      lax.igammac(np.float32(1), np.float64(2))
  with pytest.raises(TypeError, match="incompatible shapes"):
    lax.igamma(np.ones(3, np.float32), np.ones(4, np.float32))
  with pytest.raises(TypeError, match="regularized_incomplete_beta"):
    lax.betainc(np.ones(2, np.float32), np.ones(2, np.float32), np.ones(2, np.int32))


# --- betainc, zeta, Bessel ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_betainc_matches_scipy(dtype):
  ab = np.array([1e-3, 0.2, 1.0, 2.5, 10.0, 100.0])
  xs = np.array([0.0, 1e-3, 0.1, 0.5, 0.9, 0.999, 1.0])
  a, b, x = (v.ravel() for v in np.meshgrid(ab, ab, xs, indexing="ij"))
  # float32's absolute error is that of lgamma(b) - lgamma(a + b) for large b (e.g. 1e-5 at
  # I_0.999(100, 0.001), reached through 1 - I_0.001(0.001, 100)).
  tol = dict(rtol=2e-4, atol=3e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-13)
  with enable_x64():
    args = _in(dtype, a, b, x)
    ref = sp.betainc(*(v.astype(np.float64) for v in args))
    check_eager_and_jit(lax.betainc, args, ref, dtype, **tol)


def test_betainc_special_values_and_grad():
  inf = np.inf
  a = np.array([0., 1., 2., inf, 2., 2., -1, 2], np.float32)
  b = np.array([1., 0., 0., 1., 2., 2., 1, 2], np.float32)
  x = np.array([0.5, 0.5, 1., 0.5, 0., 1., 0.5, 1.5], np.float32)
  assert_close(lax.betainc(a, b, x), sp.betainc(a, b, x), np.float32)
  with enable_x64():
    a, b, x = 2.5, 1.5, np.array([0.2, 0.6, 0.95])
    g = hlox.vmap(hlox.grad(lambda x: lax.betainc(a, b, x)))(x)
    density = x ** (a - 1) * (1 - x) ** (b - 1) / np.exp(sp.betaln(a, b))
    np.testing.assert_allclose(np.asarray(g), density, rtol=1e-10)
  with pytest.raises(ValueError, match="betainc: the gradient with respect to a and b"):
    hlox.grad(lambda a: lax.betainc(a, 2.0, 0.5))(1.0)


def test_zeta_and_its_q_derivative():
  with enable_x64():
    s = np.array([1.5, 2.0, 3.5, 10.0])
    q = np.array([0.5, 1.0, 2.5, 7.0])
    check_eager_and_jit(lax.zeta, (s, q), sp.zeta(s, q), np.float64, rtol=1e-12)
    g = hlox.vmap(hlox.grad(lax.zeta, argnums=1))(s, q)
    np.testing.assert_allclose(np.asarray(g), -s * sp.zeta(s + 1, q), rtol=1e-12)
  with pytest.raises(ValueError, match="zeta: the gradient with respect to x"):
    hlox.grad(lax.zeta)(2.0, 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bessel_i0e_i1e_match_scipy(dtype):
  x = np.array([0.0, 1e-5, -0.5, 1.0, -3.0, 8.0, 15.0, 19.99, 20.0, -20.01, 30.0, 100.0,
                1e4, 1e30])
  tol = dict(rtol=2e-6, atol=0) if dtype == np.float32 else dict(rtol=1e-14, atol=0)
  with enable_x64():
    xd = x.astype(dtype)
    check_eager_and_jit(lax.bessel_i0e, (xd,), sp.i0e(xd.astype(np.float64)), dtype, **tol)
    check_eager_and_jit(lax.bessel_i1e, (xd,), sp.i1e(xd.astype(np.float64)), dtype, **tol)


def test_bessel_grads():
  with enable_x64():
    x = np.array([-4.0, -0.3, 0.7, 12.0, 25.0])
    check_grads(lax.bessel_i0e, (x,), order=2, atol=1e-6, rtol=1e-6)
    check_grads(lax.bessel_i1e, (x,), order=1, atol=1e-6, rtol=1e-6)
    g = hlox.grad(lax.bessel_i1e)(0.0)
    assert float(g) == 0.5
    out = hlox.vmap(lax.bessel_i0e)(x.reshape(5, 1))
    np.testing.assert_allclose(np.asarray(out)[:, 0], sp.i0e(x), rtol=1e-14)


# --- hlox.scipy.special (thin wrappers that promote their arguments) ----------------------

def test_scipy_special_wrappers():
  from hlox.scipy import special as hs
  x = np.array([0.2, 0.5, 0.9], np.float32)
  for name, args in [("gammainc", (2, x)), ("gammaincc", (x, 1.5)), ("gammaln", (x,)),
                     ("digamma", (x,)), ("erf", (x,)), ("erfc", (x,)), ("erfinv", (x,)),
                     ("expit", (x,)), ("logit", (x,)), ("betaln", (x, 2.0)),
                     ("betainc", (1.5, 2.0, x)), ("i0e", (x,)), ("i1e", (x,)),
                     ("zeta", (3.0, x)), ("polygamma", (1, x)), ("xlogy", (x, x)),
                     ("xlog1py", (x, x))]:
    out = getattr(hs, name)(*args)
    assert out.dtype == np.float32, name
    np.testing.assert_allclose(np.asarray(out), getattr(sp, name)(*args), rtol=1e-5,
                               err_msg=name)
  assert hs.gammaln(3).dtype == np.float32  # integers promote to the default float
  # x * log(y) is 0 where x == 0, also for y == 0, with derivatives defined there.
  assert float(hs.xlogy(0.0, 0.0)) == 0 and float(hs.xlog1py(0.0, -1.0)) == 0
  np.testing.assert_allclose([float(g) for g in hlox.grad(hs.xlogy, argnums=(0, 1))(0.0, 2.0)],
                             [np.log(2.0), 0.0])
  np.testing.assert_allclose(float(hlox.grad(hs.logit)(0.25)), 1 / (0.25 * 0.75), rtol=1e-6)
  with pytest.raises(NotImplementedError, match="q=None"):
    hs.zeta(2.0)


def test_scipy_logsumexp():
  from hlox.scipy import special as hs
  a = np.array([[1.0, 2.0, -np.inf], [3.0, -1.0, 0.5]], np.float32)
  for axis in (None, 0, 1):
    for keepdims in (False, True):
      np.testing.assert_allclose(np.asarray(hs.logsumexp(a, axis, keepdims=keepdims)),
                                 sp.logsumexp(a, axis, keepdims=keepdims), rtol=1e-6)
  b = np.array([[1.0, -2.0, 1.0], [0.0, 1.0, 1.0]], np.float32)
  out, sign = hs.logsumexp(a, 1, b=b, return_sign=True)
  ref, ref_sign = sp.logsumexp(a, 1, b=b, return_sign=True)
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(sign), ref_sign)
  assert np.isnan(np.asarray(hs.logsumexp(a, 1, b=b))[0])
  # The gradient is the softmax (the shift by the maximum carries none).
  g = np.asarray(hlox.grad(lambda v: hs.logsumexp(v))(a[1]))
  np.testing.assert_allclose(g, np.exp(a[1]) / np.exp(a[1]).sum(), rtol=1e-6)

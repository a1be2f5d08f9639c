"""Regression tests for issue 17's valid input rejected and misuse that escaped as the wrong
exception class: complex cumlogsumexp, transposing broadcast_in_dim, dot_general's
preferred_element_type on mixed operands, pmap(devices=) checks, strings, deleted and donated
arrays, and static arguments of scan/convert_element_type/one_hot."""
import ml_dtypes
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax

DN = (((1,), (0,)), ((), ()))


def _principal_cumlogsumexp(x, axis=0):
  out = np.log(np.cumsum(np.exp(x.astype(np.complex128)), axis=axis))
  return out.real + 1j * ((out.imag + np.pi) % (2 * np.pi) - np.pi)


def test_cumlogsumexp_of_complex():
  x = np.array([[1 + 1j, 2 + 0j, -1 + 3j], [-1 - 2j, 0.5 + 3j, 2 - 2j]], np.complex64)
  for axis in (0, 1):
    got = lax.cumlogsumexp(x, axis)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, _principal_cumlogsumexp(x, axis), rtol=1e-5, atol=1e-5)
  rev = hlox.jit(lambda x: lax.cumlogsumexp(x, 1, reverse=True))(x)
  np.testing.assert_allclose(rev, _principal_cumlogsumexp(x[:, ::-1], 1)[:, ::-1], rtol=1e-5,
                             atol=1e-5)
  # Holomorphic: d out[i] = sum_j<=i e^(x[j] - out[i]) dx[j].
  t = np.array([1 - 1j, 0.5 + 2j, 1j], np.complex64)
  _, tangent = hlox.jit(lambda v, t: hlox.jvp(lax.cumlogsumexp, (v,), (t,)))(x[0], t)
  e = np.exp(x[0].astype(np.complex128))
  np.testing.assert_allclose(tangent, np.cumsum(e * t) / np.cumsum(e), rtol=1e-5, atol=1e-5)
  for f in (lax.cumsum, lax.cumprod, lax.cummax, lax.cummin):
    assert f(x, 1).dtype == np.complex64
  np.testing.assert_array_equal(lax.cummax(x, 1), np.maximum.accumulate(x, 1))
  with pytest.raises((TypeError, ValueError), match="cumlogsumexp"):
    lax.cumlogsumexp(np.ones(3, np.int32))


def _np_broadcast_in_dim(x, shape, dims):
  kept = np.transpose(x, np.argsort(dims))
  return np.broadcast_to(kept.reshape([shape[d] if d in dims else 1 for d in range(len(shape))]),
                         shape)


def test_broadcast_in_dim_with_dimensions_out_of_order():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  np.testing.assert_array_equal(lax.broadcast_in_dim(x, (3, 2), (1, 0)), x.T)
  f = lambda v: lax.broadcast_in_dim(v, (3, 4, 2), (2, 0))
  want = _np_broadcast_in_dim(x, (3, 4, 2), (2, 0))
  np.testing.assert_array_equal(f(x), want)
  np.testing.assert_array_equal(hlox.jit(f)(x), want)
  # The transpose (grad) puts the cotangent back in operand order, summed over the new axis.
  w = np.arange(24.0, dtype=np.float32).reshape(3, 4, 2)
  np.testing.assert_allclose(hlox.grad(lambda v: jnp.sum(f(v) * w))(x), w.sum(1).T)
  # A size-1 operand dimension stretched, out of order.
  col = np.arange(3.0, dtype=np.float32).reshape(3, 1)
  g = lambda v: lax.broadcast_in_dim(v, (4, 2, 3), (2, 1))
  np.testing.assert_array_equal(g(col), np.broadcast_to(col.T[None], (4, 2, 3)))
  np.testing.assert_allclose(hlox.grad(lambda v: jnp.sum(g(v)))(col), np.full((3, 1), 8.0))
  xs = np.arange(30.0, dtype=np.float32).reshape(5, 2, 3)
  for axis in range(3):
    out = hlox.vmap(f, in_axes=axis)(np.moveaxis(xs, 0, axis))
    np.testing.assert_array_equal(out, np.stack([f(v) for v in xs]))
  with pytest.raises(TypeError, match="duplicates"):
    lax.broadcast_in_dim(np.ones((3, 3), np.float32), (3, 3), (1, 1))
  with pytest.raises(TypeError, match="must be a subset of output dimensions"):
    lax.broadcast_in_dim(x, (2, 3), (0, 2))


def test_dot_general_preferred_element_type_on_mixed_operands():
  a = np.array([[0.5, 1.5], [-1.7, 2.2]], np.float32)
  i = np.array([[1, 2], [3, -1]], np.int32)
  ones = np.ones((2, 2))
  assert np.asarray(lax.dot_general(ones.astype(np.int32), ones.astype(np.float32), DN,
                                    preferred_element_type=np.int32)).tolist() == [[2, 2], [2, 2]]
  # Mixed operands are both converted to the preferred type first (truncating the floats).
  for x, y in ((i, a), (a, i)):
    out = lax.dot_general(x, y, DN, preferred_element_type=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.trunc(x).astype(np.int32) @ np.trunc(y).astype(np.int32))
  # A float result may be asked for as any type (int8, bool); a float16 result stays float16.
  assert lax.dot_general(a, a, DN, preferred_element_type=np.int8).dtype == np.int8
  assert lax.dot_general(a, i, DN, preferred_element_type=np.float16).dtype == np.float16
  bf = a.astype(ml_dtypes.bfloat16)
  assert lax.dot_general(bf, a, DN).dtype == np.float32
  with pytest.raises(TypeError, match="narrower"):
    lax.dot_general(i, i, DN, preferred_element_type=np.int16)
  # Gradients flow to the float operand, in its own dtype.
  g = hlox.grad(lambda x: jnp.sum(lax.dot_general(x, i, DN, preferred_element_type=np.float32)))
  np.testing.assert_allclose(g(bf).astype(np.float32), np.tile(i.sum(1), (2, 1)))
  assert g(bf).dtype == bf.dtype


def test_pmap_devices_must_be_distinct_and_exist():
  devices = hlox.devices()
  with pytest.raises(ValueError, match=r"pmap: devices=.*more than once.*exist"):
    hlox.pmap(lambda x: x * 2, devices=devices * 2)(jnp.ones((2 * len(devices),)))
  with pytest.raises(ValueError, match="pmap: devices=.*unknown"):
    hlox.pmap(lambda x: x * 2, devices=["cpu:0"])(jnp.ones((1,)))
  np.testing.assert_array_equal(
      hlox.pmap(lambda x: x * 2, devices=devices)(jnp.ones((len(devices),))), 2.0)


def test_misuse_raises_jax_classes():
  for use in (lambda: lax.add("a", "b"), lambda: lax.optimization_barrier("a"),
              lambda: hlox.device_put("a"), lambda: lax.neg(np.array([b"x"]))):
    with pytest.raises(TypeError):
      use()
  assert lax.neg(np.ones(2, ml_dtypes.bfloat16)).dtype == ml_dtypes.bfloat16
  x = jnp.ones(3)
  with pytest.raises(TypeError, match="immutable"):
    x[0] = 2.0
  with pytest.raises(ValueError, match="unroll"):
    lax.scan(lambda c, v: (c, v), 0.0, x, unroll=-1)
  with pytest.raises(ValueError, match="dtype must be specified"):
    lax.convert_element_type(x, None)
  with pytest.raises(TypeError, match="one_hot"):
    hlox.nn.one_hot(np.arange(3), 3.5)
  double = hlox.jit(lambda v: v * 2, donate_argnums=0)
  for kill in (lambda v: v.delete(), double):
    for use in (lambda v: v[0], lambda v: v[1:], lambda v: lax.neg(v),
                lambda v: v.block_until_ready()):
      y = jnp.ones(3)
      kill(y)
      with pytest.raises(RuntimeError, match="deleted"):
        use(y)


@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax")
  from jax import lax as jlax
  x = np.array([[1 + 1j, 2 + 0j, -1 + 3j], [-1 - 2j, 0.5 + 3j, 2 - 2j]], np.complex64)
  for axis in (0, 1):
    np.testing.assert_allclose(lax.cumlogsumexp(x, axis), jlax.cumlogsumexp(x, axis),
                               rtol=1e-6, atol=1e-6)
  r = lambda v: jnp.sum(lax.cumlogsumexp(v).real)
  np.testing.assert_allclose(hlox.jit(hlox.grad(r))(x[0]), jax.jit(jax.grad(
      lambda v: jlax.cumlogsumexp(v).real.sum()))(x[0]), rtol=1e-5, atol=1e-6)
  y = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  for shape, dims in (((3, 2), (1, 0)), ((3, 4, 2), (2, 0)), ((2, 2, 3), (2, 0))):
    if y.shape[0] == shape[dims[0]] and y.shape[1] == shape[dims[1]]:
      np.testing.assert_array_equal(lax.broadcast_in_dim(y, shape, dims),
                                    jlax.broadcast_in_dim(y, shape, dims))
  pairs = [("int32", "float32"), ("bfloat16", "uint8"), ("complex64", "float32"),
           ("int8", "int8")]
  _check_dot_against_jax(jlax, pairs, (np.int32, np.int8))


@pytest.mark.slow
@pytest.mark.jax_oracle
def test_dot_general_dtype_grid_against_jax():
  pytest.importorskip("jax")
  from jax import lax as jlax
  kinds = ["bool", "int8", "uint8", "int32", "float16", "bfloat16", "float32", "complex64"]
  _check_dot_against_jax(jlax, [(a, b) for a in kinds for b in kinds],
                         (None, np.int32, np.float32, np.int8, np.bool_, np.float16))


def _check_dot_against_jax(jlax, pairs, prefs):
  a = np.array([[0.5, 1.5], [-1.7, 2.2]], np.float32)
  for dx, dy in pairs:
    for pref in prefs:
      u = a.astype(ml_dtypes.bfloat16 if dx == "bfloat16" else dx)
      v = a.T.astype(ml_dtypes.bfloat16 if dy == "bfloat16" else dy)
      try:
        want = np.asarray(jlax.dot_general(u, v, DN, preferred_element_type=pref))
      except TypeError:
        with pytest.raises(TypeError):
          lax.dot_general(u, v, DN, preferred_element_type=pref)
        continue
      got = np.asarray(lax.dot_general(u, v, DN, preferred_element_type=pref))
      assert got.dtype == want.dtype, (dx, dy, pref)
      np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                                 rtol=1e-2, atol=1e-2, err_msg=f"{dx} {dy} {pref}")

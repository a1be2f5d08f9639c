"""JAX 0.10 behaviours of ``jax.numpy`` that its own test files rely on (issue 16): Array
methods (view, byteswap, tobytes, ``in``, ``round``), copies, traced arguments that JAX
accepts (repeat, insert, delete, unravel_index), duck typing, and JAX's error phrases."""
import copy
import warnings
from typing import NamedTuple

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.errors import ConcretizationTypeError

rng = np.random.default_rng(0)


# --- take_along_axis -----------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis_one_hot_matches_gather(axis):
  x = rng.standard_normal((3, 4, 5)).astype(np.float32)
  shape = [3, 4, 5]
  shape[axis] *= 2
  idx = rng.integers(-x.shape[axis], x.shape[axis], shape).astype(np.int8)
  expected = np.take_along_axis(x, idx, axis=axis)
  np.testing.assert_allclose(jnp.take_along_axis(x, idx, axis=axis, mode="one_hot"), expected,
                             rtol=1e-6)
  np.testing.assert_array_equal(jnp.take_along_axis(x, idx, axis=axis), expected)


def test_take_along_axis_wrap_negative_indices():
  x, idx = jnp.array([10, 20, 30]), jnp.array([-1, -2])
  np.testing.assert_array_equal(jnp.take_along_axis(x, idx, axis=0, mode="clip"), [30, 20])
  np.testing.assert_array_equal(
      jnp.take_along_axis(x, idx, axis=0, mode="clip", wrap_negative_indices=False), [10, 10])
  # Without wrapping the indices keep their dtype and no select is traced.
  jaxpr = hlox.make_jaxpr(lambda i: jnp.take_along_axis(
      x, i, axis=0, mode="promise_in_bounds", wrap_negative_indices=False))(
          jnp.array([1, 2], jnp.int8))
  [jit_eqn] = jaxpr.eqns  # staged as one nested jit, as in JAX
  prims = {e.primitive.name for e in jit_eqn.params["jaxpr"].eqns}
  assert "select_n" not in prims and "gather" in prims
  gather = next(e for e in jit_eqn.params["jaxpr"].eqns if e.primitive.name == "gather")
  assert gather.invars[1].aval.dtype == np.int8


# --- Array methods --------------------------------------------------------------------------

@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int32, np.uint8),
                                     (np.uint8, np.int16), (np.complex64, np.float32),
                                     (np.int8, np.bool_), (np.bool_, np.int8)])
def test_view_matches_numpy(src, dst):
  x = rng.integers(0, 2, (2, 8)).astype(src)
  np.testing.assert_array_equal(jnp.asarray(x).view(dst), x.view(dst))
  np.testing.assert_array_equal(hlox.jit(lambda a: a.view(dst))(x), x.view(dst))


def test_view_errors_and_byteswap():
  with pytest.raises(ValueError, match="0d array"):
    jnp.array(1, jnp.int32).view(jnp.int8)
  x = np.arange(6, dtype=np.int32)
  np.testing.assert_array_equal(jnp.asarray(x).byteswap(), x.byteswap())
  c = (x + 1j * x).astype(np.complex64)
  np.testing.assert_array_equal(jnp.asarray(c).byteswap(), c.byteswap())


def test_tobytes_tolist_and_their_tracer_errors():
  v = np.arange(12, dtype=np.int32).reshape(3, 4)
  assert jnp.asarray(v).tobytes("F") == v.tobytes("F")
  for method in ("tobytes", "tolist"):
    with pytest.raises(ConcretizationTypeError,
                       match=rf"The {method}\(\) method was called on traced array"):
      hlox.jit(lambda x: getattr(x, method)())(v)


def test_contains_round_itemsize_on_tracers():
  assert 1 in jnp.arange(4) and 100 not in jnp.arange(4)
  with pytest.raises(ValueError, match="search array must be one-dimensional"):
    _ = 1 in jnp.array(1)
  with pytest.raises(TypeError, match="unsupported operand type"):
    _ = "a" in jnp.arange(2)
  out = hlox.jit(lambda x: round(x) + x.itemsize + x.nbytes)(jnp.float32(1.6))
  assert int(out) == 2 + 4 + 4
  assert float(hlox.jit(round, static_argnums=1)(jnp.float32(1.234), 2)) == pytest.approx(1.23)


def test_operands_defer_to_named_tuples_and_reject_lists():
  class Wrapped(NamedTuple):
    arr: object
    def __rmul__(self, other):
      return Wrapped(other * self.arr)
  assert isinstance(jnp.ones(2) * Wrapped(jnp.ones(2)), Wrapped)
  with pytest.raises(TypeError):
    jnp.ones(2) + [1, 2]
  with pytest.raises(TypeError, match="unsupported operand"):
    _ = jnp.ones(2) == {1: 2}


def test_jax_array_protocol_and_shape_dtype_duck_typing():
  class ArrayLike:
    def __jax_array__(self):
      return jnp.array(3.)
  np.testing.assert_array_equal(ArrayLike() * jnp.arange(3.), [0., 3., 6.])
  np.testing.assert_array_equal(jnp.sin(ArrayLike()), np.sin(np.float32(3.)))
  s = hlox.ShapeDtypeStruct((1, 2), np.dtype("int32"))
  assert jnp.zeros_like(s).shape == (1, 2) and jnp.full_like(s, 2).dtype == np.int32


# --- copies ---------------------------------------------------------------------------------

def test_copies_get_new_buffers():
  x = jnp.ones(4)
  ptr = lambda a: a.unsafe_buffer_pointer()
  for f in (jnp.array, jnp.copy, copy.copy, copy.deepcopy):
    assert ptr(f(x)) != ptr(x)
  assert ptr(x.astype("float32", copy=True)) != ptr(x)
  assert x.astype("float32") is x
  f = lambda a: jnp.array(a, copy=True)
  y, ydot = hlox.jvp(f, (x,), (x,))
  assert y is not x and ydot is not x
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    with pytest.raises(DeprecationWarning, match="positionally is deprecated"):
      jnp.array(x, None, True)
  with pytest.raises(TypeError, match="multiple values for argument 'copy'"):
    jnp.array(x, None, True, copy=False)


def test_astype_complex_to_real_warns():
  with pytest.warns(DeprecationWarning, match="Casting from complex to real dtypes"):
    jnp.array(2 + 1j).astype("float32")
  np.testing.assert_array_equal(jnp.array([0j, 1j]).astype(bool), [False, True])


# --- traced arguments JAX accepts ----------------------------------------------------------

@pytest.mark.parametrize("reps,axis", [([1, 3, 2], 0), ([1, 0, 2, 3], 1), (2, None)])
def test_repeat_with_traced_repeats(reps, axis):
  m = np.arange(12.).reshape(3, 4)
  expected = np.repeat(m, reps, axis)
  length = expected.shape[axis or 0]
  f = hlox.jit(lambda a, r: jnp.repeat(a, r, axis, total_repeat_length=length))
  np.testing.assert_array_equal(f(m, np.array(reps)), expected)


def test_insert_and_delete_with_traced_indices():
  x = np.arange(24.).reshape(2, 3, 4)
  ins = hlox.jit(lambda a, i: jnp.insert(a, i, 7., axis=2))
  dele = hlox.jit(lambda a, i: jnp.delete(a, i, axis=1, assume_unique_indices=True))
  for i in (-4, 0, 2, 4):
    np.testing.assert_array_equal(ins(x, np.int32(i)), np.insert(x, i, 7., axis=2))
  idx = np.array([2, 0])
  np.testing.assert_array_equal(dele(x, idx), np.delete(x, idx, axis=1))


def test_unravel_index_under_jit_keeps_index_dtype():
  idx = np.arange(-5, 9).astype(np.int8)
  got = hlox.jit(jnp.unravel_index)(idx, (3, 4))
  clipped = np.where(np.clip(idx, -12, 11) < 0, np.clip(idx, -12, 11) + 12, np.clip(idx, -12, 11))
  for g, e in zip(got, np.unravel_index(clipped, (3, 4))):
    assert g.dtype == np.int8
    np.testing.assert_array_equal(g, e)


def test_piecewise_traces_its_functions_once():
  calls = []
  def g(x):
    calls.append(1)
    return x
  x = jnp.arange(-2., 3.)
  for _ in range(3):
    out = jnp.piecewise(x, [x < 0], [g, 0.])
  assert len(calls) == 1
  np.testing.assert_array_equal(out, [-2., -1., 0., 0., 0.])


def test_sinc_derivatives_at_zero():
  assert float(hlox.grad(jnp.sinc)(0.)) == 0.
  assert float(hlox.grad(hlox.grad(jnp.sinc))(0.)) == pytest.approx(-np.pi ** 2 / 3, rel=1e-6)


# --- smaller functions ---------------------------------------------------------------------

def test_small_numpy_functions_match_numpy():
  z = np.array([0., 1e-45, -1e-45, 1.], np.float32)
  np.testing.assert_array_equal(jnp.spacing(z), np.spacing(z))
  x1 = np.array([0., np.inf, 1.5], np.float32)
  np.testing.assert_array_equal(jnp.ldexp(x1, np.array([1000, -1000, 2], np.int32)),
                                np.ldexp(x1, np.array([1000, -1000, 2])))
  assert jnp.size(jnp.zeros((2, 3, 4)), (0, 2)) == 8
  assert jnp.ravel_multi_index((np.int8([0, 1]), np.int8([1, 2])), (2, 3)).dtype == np.int8


@pytest.mark.slow  # many small programs to compile; the fast test above covers the core
def test_more_numpy_functions_match_numpy():
  a = np.array([[0, 0, 0], [0, 1, 2], [0, 0, 0]])
  for axis in (None, 0, -1):
    np.testing.assert_array_equal(jnp.trim_zeros(a, axis=axis), np.trim_zeros(a, axis=axis))
  y, dx = rng.random((3, 4, 5)), rng.random((3, 3, 5))
  np.testing.assert_allclose(jnp.trapezoid(y, dx=dx, axis=1), np.trapezoid(y, dx=dx, axis=1),
                             rtol=1e-5)
  assert jnp.cov(jnp.arange(5), dtype="bfloat16").dtype == jnp.bfloat16
  c = jnp.convolve(np.uint16([1, 2, 3]), np.uint16([1, 1]), preferred_element_type=np.uint16)
  assert c.dtype == np.uint16 and c.tolist() == [1, 3, 5, 3]
  assert float(jnp.interp(0.5, jnp.array([1., 2.]), jnp.array([10., 20.]),
                          left="extrapolate")) == 5.
  assert int(jnp.gcd(np.array([True]), np.int8(6))[0]) == 1


def test_pad_with_a_function():
  def pad_with(vector, pad_width, axis, kwargs):
    value = kwargs.get("padder", 10)
    return vector.at[:pad_width[0]].set(value).at[-pad_width[1]:].set(value)
  def np_pad_with(vector, pad_width, axis, kwargs):
    vector[:pad_width[0]] = kwargs.get("padder", 10)
    vector[-pad_width[1]:] = kwargs.get("padder", 10)
  a = np.arange(6).reshape(2, 3)
  np.testing.assert_array_equal(jnp.pad(a, 1, pad_with, padder=7),
                                np.pad(a, 1, np_pad_with, padder=7))
  assert jnp.pad(jnp.array(1.)[None], 0).weak_type


# --- JAX's error phrases --------------------------------------------------------------------

def test_error_messages_start_with_jax_phrases():
  cases = [
      (TypeError, r"Did you accidentally write `jax\.numpy\.zeros\(2, 3\)`",
       lambda: jnp.zeros(2, 3)),
      (TypeError, "Shapes must be 1D sequences of concrete values of integer type",
       lambda: hlox.jit(jnp.zeros)(2)),
      (ConcretizationTypeError, "It arose in the jnp.arange argument 'stop'",
       lambda: hlox.jit(jnp.arange)(3)),
      (ValueError, "complex start/stop/step to jnp.arange", lambda: jnp.arange(1j, 2j)),
      (ConcretizationTypeError, "slice start of jnp.ogrid",
       lambda: hlox.jit(lambda a, b: jnp.ogrid[a:b])(0, 2)),
      (ValueError, "Cannot broadcast to shape with fewer dimensions",
       lambda: jnp.broadcast_to(jnp.zeros((3, 4)), (4,))),
      (ValueError, "Incompatible shapes for broadcasting",
       lambda: jnp.broadcast_to(np.ones((2, 3)), (1, 3))),
      (TypeError, "Number of tensordot axes", lambda: jnp.tensordot(np.ones((2, 2)), 1., 2)),
      (ValueError, "axis1 and axis2 can not be same", lambda: jnp.trace(np.ones((2, 2)), 0, 1, 1)),
      (ValueError, "Complex values have no ordering", lambda: jnp.clip(1j, 0, 1)),
      (ValueError, "The input must be non-scalar to take a cumulative sum",
       lambda: jnp.cumulative_sum(1.)),
      (ValueError, r"initial value must be a scalar. Got array of shape \(2,\)",
       lambda: jnp.sum(np.ones(2), initial=np.ones(2))),
      (TypeError, "JAX does not support string indexing", lambda: jnp.arange(3)["a"]),
      (NotImplementedError, "simultaneous contraction of 3 or more operands",
       lambda: jnp.einsum("i,i,i->", *[np.ones(2)] * 3, optimize=[(0, 1, 2)])),
  ]
  for error, pattern, call in cases:
    with pytest.raises(error, match=pattern):
      call()
  with pytest.warns(DeprecationWarning, match="ndim requires ndarray or scalar arguments"):
    assert jnp.ndim([1, 2]) == 1

"""hlox.numpy array creation and shape manipulation against NumPy, eagerly and under jit,
including dtype results (JAX's 32-bit defaults and weak types) and error messages."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.errors import ConcretizationTypeError
from tests.util import assert_close, check_eager_and_jit, rand


def _eqn_names(fun, *args):
  return [eqn.primitive.name for eqn in hlox.make_jaxpr(fun)(*args).eqns]


def _arange(*shape, dtype=np.float32):
  return np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)


# --- array / asarray ---------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype,weak", [
    ([1, 2], np.int32, False),
    ([1.5, 2], np.float32, False),
    ([[1, 2], [3, 4]], np.int32, False),
    ((1, 2.0, 3j), np.complex64, False),
    ([True, False], np.bool_, False),
    ([], np.float32, False),
    (1.0, np.float32, True),
    (5, np.int32, True),
    (True, np.bool_, False),
    (np.arange(3.0), np.float32, False),
    (np.float64(2.5), np.float32, False),
    (np.arange(4, dtype=np.int64).reshape(2, 2), np.int32, False),
    (np.array([1, 2], np.uint8), np.uint8, False),
    ([np.float16(1), 2], np.float16, False),
])
def test_array_dtypes(value, dtype, weak):
  out = jnp.array(value)
  assert out.dtype == dtype and out.weak_type == weak, (out.dtype, out.weak_type)
  assert_close(out, np.asarray(value).astype(dtype), dtype)
  assert_close(jnp.asarray(value), np.asarray(value).astype(dtype), dtype)


def test_array_explicit_dtype_ndmin_and_arrays():
  out = jnp.array([1.5, 2], dtype=jnp.int32)
  assert out.dtype == np.int32 and not out.weak_type
  assert_close(out, np.array([1, 2], np.int32))
  out = jnp.array(1.0, dtype=jnp.float16)
  assert out.dtype == np.float16 and not out.weak_type
  assert jnp.array(3, dtype=jnp.float64).dtype == np.float32  # canonicalized (no x64)
  assert_close(jnp.array([1 + 2j, 3], dtype=jnp.float32), np.array([1, 3], np.float32))
  out = jnp.array(np.ones(3), ndmin=3)
  assert out.shape == (1, 1, 3)
  x = jnp.array([1, 2, 3])
  assert jnp.asarray(x) is x
  y = jnp.asarray(x, dtype=jnp.float32)
  assert y.dtype == np.float32
  assert_close(y, np.array([1, 2, 3], np.float32))
  weak = lax.full((2,), 1.0)
  assert jnp.array(weak).weak_type and not jnp.array(weak, dtype=jnp.float32).weak_type


def test_array_of_arrays_eager():
  a, b = jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])
  out = jnp.array([a, b])
  assert out.dtype == np.float32
  assert_close(out, np.array([[1, 2], [3, 4]], np.float32))
  out = jnp.array([[a, np.zeros(2)], [b, [5, 6]]])
  assert_close(out, np.array([[[1, 2], [0, 0]], [[3, 4], [5, 6]]], np.float32))
  wide = jnp.array([jnp.float32(i) for i in range(40)] + [jnp.array(40.0)])
  assert_close(wide, np.arange(41, dtype=np.float32))


def test_array_of_tracers_under_jit():
  f = hlox.jit(lambda x: jnp.array([x, 2 * x]))
  assert_close(f(np.float32(3)), np.array([3, 6], np.float32), np.float32)
  assert_close(f(np.ones(2, np.float32)), np.array([[1, 1], [2, 2]], np.float32), np.float32)
  g = hlox.jit(lambda x, y: jnp.array([[x, 1], (y, 2.5)]))
  # int32 tracers with a weak float give float32, as in JAX.
  assert_close(g(np.int32(7), np.int32(8)), np.array([[7, 1], [8, 2.5]], np.float32),
               np.float32)
  k = hlox.jit(lambda x, y: jnp.array([[x, 1], (y, 2)]))
  assert_close(k(np.int32(7), np.int32(8)), np.array([[7, 1], [8, 2]], np.int32), np.int32)
  h = hlox.jit(lambda x: jnp.array([x, 1.5]))
  assert_close(h(np.int32(2)), np.array([2, 1.5], np.float32), np.float32)
  names = _eqn_names(lambda x: jnp.array([x, x]), np.float32(1))
  assert "concatenate" in names


def test_array_errors():
  with pytest.raises(ValueError, match="inhomogeneous"):
    jnp.array([jnp.ones(2), jnp.ones(3)])
  with pytest.raises(ValueError):
    jnp.array([[1, 2], [3]])
  with pytest.raises(ValueError, match="None"):
    jnp.array([1, None])
  with pytest.raises(OverflowError, match="int32"):
    jnp.array(2**40)
  with pytest.raises(OverflowError):
    jnp.array([1, 2**40])
  with pytest.raises(TypeError, match="array"):
    jnp.array("abc")
  with pytest.raises(TypeError, match="invalid dtype"):
    jnp.array(1, dtype="not_a_dtype")


# --- zeros / ones / full / empty / *_like ------------------------------------------------

@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("dtype", [None, np.int32, np.bool_, np.float16, np.complex64])
def test_zeros_ones_empty(name, dtype):
  fn = getattr(jnp, name)
  expected_dtype = np.float32 if dtype is None else dtype
  value = 1 if name == "ones" else 0
  expected = np.full((2, 3), value, expected_dtype)
  out = check_eager_and_jit(lambda: fn((2, 3), dtype), (), expected, expected_dtype)
  assert not out.weak_type
  assert fn(3).shape == (3,) and fn(()).shape == ()


def test_creation_is_computed_by_xla_under_jit():
  jaxpr = hlox.make_jaxpr(lambda: (jnp.zeros((1000, 1000)), jnp.arange(10000),
                                   jnp.eye(500)))()
  assert not jaxpr.consts and not jaxpr.jaxpr.constvars
  assert {"broadcast_in_dim", "iota"} <= {e.primitive.name for e in jaxpr.eqns}


def test_zeros_errors():
  with pytest.raises(TypeError, match="zeros: negative dimensions"):
    jnp.zeros((2, -1))
  with pytest.raises(TypeError, match="Cannot interpret .4. as a data type"):
    jnp.zeros(3, 4)
  with pytest.raises(TypeError):
    hlox.jit(lambda n: jnp.zeros(n))(3)


def test_full():
  out = check_eager_and_jit(lambda: jnp.full((2, 2), 1.5), (), np.full((2, 2), 1.5, np.float32),
                            np.float32)
  assert out.weak_type
  assert jnp.full(2, 7).dtype == np.int32
  assert_close(jnp.full(4, 2, dtype=float), np.full(4, 2.0, np.float32), np.float32)
  assert_close(jnp.full((2, 3), 0, dtype=bool), np.zeros((2, 3), bool), np.bool_)
  assert_close(jnp.full((2, 3), np.arange(3)), np.tile(np.arange(3), (2, 1)), np.int32)
  f = hlox.jit(lambda v: jnp.full((3,), v))
  assert_close(f(np.float32(2)), np.full(3, 2, np.float32), np.float32)
  with pytest.raises(ValueError, match="cannot be broadcast"):
    jnp.full((2, 3), np.arange(2))


@pytest.mark.parametrize("name,value", [("zeros_like", 0), ("ones_like", 1), ("empty_like", 0)])
def test_like_functions(name, value):
  fn = getattr(jnp, name)
  x = np.ones((2, 3), np.int16)
  check_eager_and_jit(fn, (x,), np.full((2, 3), value, np.int16), np.int16)
  check_eager_and_jit(lambda x: fn(x, dtype=np.float32, shape=(4,)), (x,),
                      np.full(4, value, np.float32), np.float32)
  weak = fn(2.0)
  assert weak.dtype == np.float32 and weak.weak_type
  assert not fn(np.float32(2)).weak_type
  with pytest.raises(TypeError, match=name):
    fn([1, 2])


def test_full_like():
  x = np.ones((2, 2), np.float32)
  check_eager_and_jit(lambda x: jnp.full_like(x, 3), (x,), np.full((2, 2), 3, np.float32),
                      np.float32)
  assert_close(jnp.full_like(np.ones(3, np.int32), 2.7), np.full(3, 2, np.int32), np.int32)
  assert_close(jnp.full_like(x, np.array([1, 2])), np.array([[1, 2], [1, 2]], np.float32),
               np.float32)
  assert_close(jnp.full_like(x, 5, shape=(3,), dtype=np.uint8), np.full(3, 5, np.uint8),
               np.uint8)


# --- arange ------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((9, 2, -2), {}), ((5, 2), {}), ((0,), {}),
    ((1.5,), {}), ((0, 1, 0.1), {}), ((-1, 1, 0.25), {}), ((5,), {"dtype": np.float32}),
    ((3, 10, 2), {"dtype": np.uint8}), ((10, 0, -3), {"dtype": np.uint32}),
    ((6,), {"dtype": np.float16}), ((0.5, 5), {"dtype": np.int32}),
    ((np.int64(4),), {}), ((np.float32(2),), {}),
])
def test_arange(args, kwargs):
  expected = np.arange(*args, **kwargs)
  dtype = kwargs.get("dtype") or (np.int32 if expected.dtype.kind == "i" else np.float32)
  expected = expected.astype(dtype)
  check_eager_and_jit(lambda: jnp.arange(*args, **kwargs), (), expected, dtype)


def test_arange_concrete_array_bounds_and_jaxpr():
  assert_close(jnp.arange(jnp.array(4)), np.arange(4, dtype=np.int32), np.int32)
  f = hlox.jit(lambda x: jnp.arange(x.shape[0]) * 2)
  assert_close(f(np.ones(3)), np.array([0, 2, 4], np.int32), np.int32)
  names = _eqn_names(lambda: jnp.arange(2, 20, 3))
  assert names[0] == "iota"


def test_arange_errors():
  with pytest.raises(ConcretizationTypeError, match="stop argument of arange must be a "
                                                    "concrete value"):
    hlox.jit(lambda n: jnp.arange(0, n))(3)
  # JAX's phrase, naming a lone argument as the stop it is.
  with pytest.raises(ConcretizationTypeError, match="It arose in the jnp.arange argument 'stop'"):
    hlox.jit(lambda n: jnp.arange(n))(3)
  with pytest.raises(ConcretizationTypeError, match="jnp.arange argument 'start'"):
    hlox.jit(lambda n: jnp.arange(n, 3))(0)
  with pytest.raises(ValueError, match="complex start/stop/step to jnp.arange"):
    jnp.arange(0, 5, 1 + 1j)
  with pytest.raises(ValueError, match="step must not be zero"):
    jnp.arange(0, 5, 0)
  with pytest.raises(ValueError, match="must be a scalar"):
    jnp.arange(np.arange(3))


# --- linspace / logspace / geomspace -----------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    dict(start=0, stop=1, num=5), dict(start=-2.5, stop=7, num=11, endpoint=False),
    dict(start=1, stop=0, num=1), dict(start=1, stop=0, num=0), dict(start=0, stop=10, num=7,
                                                                     dtype=np.int32),
    dict(start=-5, stop=5, num=4, dtype=np.int32),
    dict(start=np.array([0.0, 1.0]), stop=10, num=4, axis=1),
    dict(start=np.array([0.0, 1.0]), stop=np.array([[5.0], [6.0]]), num=3, axis=-1),
    dict(start=0, stop=1 + 1j, num=3),
])
def test_linspace(kwargs):
  expected = np.linspace(**kwargs)
  dtype = kwargs.get("dtype") or (np.complex64 if expected.dtype.kind == "c" else np.float32)
  check_eager_and_jit(lambda: jnp.linspace(**kwargs), (), expected.astype(dtype), dtype,
                      atol=1e-5)


def test_linspace_retstep_and_traced_bounds():
  out, step = jnp.linspace(0, 2, 5, retstep=True)
  e_out, e_step = np.linspace(0, 2, 5, retstep=True)
  assert_close(out, e_out.astype(np.float32), np.float32)
  assert_close(step, np.float32(e_step), np.float32)
  _, step = jnp.linspace(0, 2, 1, retstep=True)
  assert np.isnan(np.asarray(step))
  f = hlox.jit(lambda a, b: jnp.linspace(a, b, 4))
  assert_close(f(np.float32(1), np.float32(4)), np.linspace(1, 4, 4).astype(np.float32),
               np.float32)


def test_linspace_errors():
  with pytest.raises(ValueError, match="must be non-negative"):
    jnp.linspace(0, 1, -1)
  with pytest.raises(TypeError, match="num must be an integer"):
    jnp.linspace(0, 1, 2.5)
  with pytest.raises(ConcretizationTypeError, match="num"):
    hlox.jit(lambda n: jnp.linspace(0, 1, n))(3)
  with pytest.raises(ValueError, match="axis 2 is out of bounds"):
    jnp.linspace(np.zeros(2), 1, 3, axis=2)


@pytest.mark.parametrize("kwargs", [
    dict(start=0, stop=2, num=3), dict(start=1, stop=3, num=4, base=2.0, endpoint=False),
    dict(start=np.array([0.0, 1.0]), stop=2, num=3, axis=1),
])
def test_logspace(kwargs):
  check_eager_and_jit(lambda: jnp.logspace(**kwargs), (),
                      np.logspace(**kwargs).astype(np.float32), np.float32, rtol=1e-5)


@pytest.mark.parametrize("kwargs", [
    dict(start=1, stop=1000, num=4), dict(start=-1, stop=-100, num=3),
    dict(start=2, stop=32, num=4, endpoint=False), dict(start=1, stop=2, num=1),
    dict(start=np.array([1.0, 10.0]), stop=1000, num=3, axis=1),
])
def test_geomspace(kwargs):
  check_eager_and_jit(lambda: jnp.geomspace(**kwargs), (),
                      np.geomspace(**kwargs).astype(np.float32), np.float32, rtol=1e-5)
  with pytest.raises(ValueError, match="cannot include zero"):
    jnp.geomspace(0, 1, 3)


# --- eye / identity / tri / tril / triu / diag / diagonal --------------------------------

@pytest.mark.parametrize("N,M,k", [(3, None, 0), (3, 4, 1), (4, 3, -2), (2, 2, 5), (3, 3, -9),
                                   (0, 2, 0)])
def test_eye_and_tri(N, M, k):
  check_eager_and_jit(lambda: jnp.eye(N, M, k), (), np.eye(N, M, k, dtype=np.float32),
                      np.float32)
  check_eager_and_jit(lambda: jnp.tri(N, M, k, dtype=np.int32), (), np.tri(N, M, k, np.int32),
                      np.int32)


def test_eye_dtype_identity_and_traced_k():
  assert_close(jnp.eye(2, dtype=bool), np.eye(2, dtype=bool), np.bool_)
  assert_close(jnp.identity(3, dtype=jnp.int8), np.identity(3, np.int8), np.int8)
  f = hlox.jit(lambda k: jnp.eye(3, 4, k))
  assert_close(f(np.int32(-1)), np.eye(3, 4, -1, np.float32), np.float32)
  with pytest.raises(ValueError, match="N must be non-negative"):
    jnp.eye(-1)
  # JAX's TypeError for a traced dimension (its phrase, then where it arose).
  with pytest.raises(TypeError, match=r"(?s)Shapes must be 1D sequences of concrete values.*"
                                      r"argument of 'N' jnp.eye\(\).*depends on the value "
                                      "of the argument n"):
    hlox.jit(lambda n: jnp.eye(n))(2)


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("shape,k", [((3, 3), 0), ((3, 4), 1), ((4, 3), -1), ((2, 3, 4), 2),
                                     ((3, 3), -5)])
def test_tril_triu(name, shape, k):
  x = _arange(*shape) + 1
  check_eager_and_jit(lambda x: getattr(jnp, name)(x, k), (x,),
                      getattr(np, name)(x, k), np.float32)


def test_tril_triu_dtypes_and_errors():
  b = np.ones((3, 3), bool)
  assert_close(jnp.tril(b), np.tril(b), np.bool_)
  i = _arange(3, 3, dtype=np.int32)
  assert_close(jnp.triu(i, -1), np.triu(i, -1), np.int32)
  with pytest.raises(ValueError, match="tril: argument must be at least 2-d"):
    jnp.tril(np.ones(3))


@pytest.mark.parametrize("shape,k", [((3,), 0), ((3,), 2), ((4,), -1), ((0,), 1), ((3, 4), 0),
                                     ((3, 4), 2), ((3, 4), -2), ((3, 4), 7)])
def test_diag(shape, k):
  v = _arange(*shape) + 1
  check_eager_and_jit(lambda v: jnp.diag(v, k), (v,), np.diag(v, k), np.float32)


@pytest.mark.parametrize("shape,offset,a1,a2", [((3, 4), 0, 0, 1), ((3, 4), 1, 0, 1),
                                                ((4, 3), -2, 0, 1), ((3, 4), 0, 1, 0),
                                                ((2, 3, 4), 1, 2, 0), ((2, 3, 4), -1, -1, -2),
                                                ((3, 3), 5, 0, 1), ((0, 3), 0, 0, 1)])
def test_diagonal(shape, offset, a1, a2):
  x = _arange(*shape, dtype=np.int32)
  check_eager_and_jit(lambda x: jnp.diagonal(x, offset, a1, a2), (x,),
                      np.diagonal(x, offset, a1, a2), np.int32)


def test_diag_diagonal_errors():
  with pytest.raises(ValueError, match="diag: input must be 1-d or 2-d"):
    jnp.diag(np.ones((2, 2, 2)))
  with pytest.raises(ValueError, match="diagonal: axis1 and axis2 cannot be the same"):
    jnp.diagonal(np.ones((2, 2)), 0, 1, 1)
  with pytest.raises(ValueError, match="diagonal: axis 2 is out of bounds"):
    jnp.diagonal(np.ones((2, 2)), 0, 0, 2)


# --- meshgrid / indices ------------------------------------------------------------------

@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
  xs = [np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32) + 5,
        np.arange(4, dtype=np.float32)]
  out = jnp.meshgrid(*xs, indexing=indexing, sparse=sparse)
  expected = np.meshgrid(*xs, indexing=indexing, sparse=sparse)
  assert len(out) == len(expected)
  for o, e in zip(out, expected):
    assert_close(o, e, np.float32)
  jitted = hlox.jit(lambda *xs: jnp.meshgrid(*xs, indexing=indexing))(*xs[:2])
  for o, e in zip(jitted, np.meshgrid(*xs[:2], indexing=indexing)):
    assert_close(o, e, np.float32)
  with pytest.raises(ValueError, match="indexing"):
    jnp.meshgrid(xs[0], indexing="yx")


@pytest.mark.parametrize("dims", [(2, 3), (4,), (2, 1, 3)])
def test_indices(dims):
  check_eager_and_jit(lambda: jnp.indices(dims), (), np.indices(dims), np.int32)
  for o, e in zip(jnp.indices(dims, sparse=True), np.indices(dims, sparse=True)):
    assert_close(o, e, np.int32)
  assert jnp.indices(dims, dtype=np.float32).dtype == np.float32


# --- reshape / ravel / transpose / axes --------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 6), (-1,), (2, -1, 3), (24,), (1, 24, 1)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_reshape(shape, order):
  x = _arange(2, 3, 4)
  check_eager_and_jit(lambda x: jnp.reshape(x, shape, order=order), (x,),
                      np.reshape(x, shape, order=order), np.float32)


def test_reshape_keywords_methods_and_errors():
  x = _arange(2, 3)
  assert_close(jnp.reshape(x, shape=(3, 2)), x.reshape(3, 2))
  assert_close(jnp.reshape(x, newshape=6), x.reshape(6))
  assert_close(jnp.asarray(x).reshape(3, 2), x.reshape(3, 2))
  assert_close(jnp.asarray(x).reshape((-1,)), x.reshape(-1))
  assert_close(jnp.ravel(x, order="F"), x.ravel(order="F"))
  assert_close(jnp.asarray(x).flatten(), x.ravel())
  a = jnp.asarray(x)
  with pytest.raises(TypeError, match="cannot reshape array of shape \\(2, 3\\)"):
    jnp.reshape(a, (4, -1))
  with pytest.raises(ValueError, match="only specify one unknown dimension"):
    jnp.reshape(a, (-1, -1))
  with pytest.raises(ValueError, match="order"):
    jnp.reshape(a, 6, order="X")
  # A NumPy array is reshaped by its own method, as in JAX: NumPy's result and errors.
  assert type(jnp.reshape(x, (3, 2))) is np.ndarray
  with pytest.raises(ValueError, match="cannot reshape array of size 6"):
    jnp.reshape(x, (4, -1))


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (-1, 0, 1), (2, 1, 0)])
def test_transpose(axes):
  x = _arange(2, 3, 4)
  check_eager_and_jit(lambda x: jnp.transpose(x, axes), (x,), np.transpose(x, axes),
                      np.float32)


def test_transpose_methods_and_errors():
  x = _arange(2, 3, 4)
  a = jnp.asarray(x)
  assert_close(a.T, x.T)
  assert_close(a.transpose(1, 0, 2), x.transpose(1, 0, 2))
  assert_close(a.transpose((2, 0, 1)), x.transpose(2, 0, 1))
  assert_close(jnp.matrix_transpose(x), np.swapaxes(x, -1, -2))
  with pytest.raises(ValueError, match="transpose: repeated axis"):
    jnp.transpose(x, (0, 0, 1))
  with pytest.raises(ValueError, match="transpose: axis 3 is out of bounds"):
    jnp.transpose(x, (0, 1, 3))
  with pytest.raises(ValueError, match="don't match"):
    jnp.transpose(x, (0, 1))


@pytest.mark.parametrize("a1,a2", [(0, 2), (-1, 0), (1, 1)])
def test_swapaxes(a1, a2):
  x = _arange(2, 3, 4)
  check_eager_and_jit(lambda x: jnp.swapaxes(x, a1, a2), (x,), np.swapaxes(x, a1, a2),
                      np.float32)
  with pytest.raises(ValueError, match="swapaxes: axis 3"):
    jnp.swapaxes(x, 3, 0)


@pytest.mark.parametrize("src,dst", [(0, -1), (-1, 0), ((0, 1), (2, 0)), ([2, 0], [0, 1])])
def test_moveaxis(src, dst):
  x = _arange(2, 3, 4)
  check_eager_and_jit(lambda x: jnp.moveaxis(x, src, dst), (x,), np.moveaxis(x, src, dst),
                      np.float32)


def test_moveaxis_errors():
  with pytest.raises(ValueError, match="same number of elements"):
    jnp.moveaxis(np.ones((2, 3)), (0, 1), (0,))
  with pytest.raises(ValueError, match="moveaxis: repeated axis"):
    jnp.moveaxis(np.ones((2, 3)), (0, 0), (0, 1))


@pytest.mark.parametrize("axis", [0, -1, (0, 2), (1, -1), (0, 1, 2)])
def test_expand_dims(axis):
  x = _arange(3, 4)
  check_eager_and_jit(lambda x: jnp.expand_dims(x, axis), (x,), np.expand_dims(x, axis),
                      np.float32)


def test_expand_dims_errors():
  with pytest.raises(ValueError, match="expand_dims: axis 3 is out of bounds"):
    jnp.expand_dims(np.ones((2, 2)), 3)
  with pytest.raises(ValueError, match="expand_dims: repeated axis"):
    jnp.expand_dims(np.ones(2), (0, -3))


@pytest.mark.parametrize("axis", [None, 0, (0, 3), -1])
def test_squeeze(axis):
  x = _arange(1, 3, 2, 1)
  check_eager_and_jit(lambda x: jnp.squeeze(x, axis), (x,), np.squeeze(x, axis), np.float32)
  assert_close(jnp.asarray(x).squeeze(), np.squeeze(x))


def test_squeeze_errors():
  with pytest.raises(ValueError, match="squeeze: cannot select an axis to squeeze out which "
                                       "has size not equal to one"):
    jnp.squeeze(np.ones((1, 2)), 1)
  with pytest.raises(ValueError, match="squeeze: axis 5"):
    jnp.squeeze(np.ones((1, 2)), 5)


# --- broadcasting ------------------------------------------------------------------------

@pytest.mark.parametrize("shape,target", [((3,), (2, 3)), ((1, 3), (4, 3)), ((), (2, 2)),
                                          ((2, 1), (3, 2, 5)), ((3,), 3)])
def test_broadcast_to(shape, target):
  x = _arange(*shape) if shape else np.float32(2)
  check_eager_and_jit(lambda x: jnp.broadcast_to(x, target), (x,), np.broadcast_to(x, target),
                      np.float32)


def test_broadcast_arrays_shapes_and_errors():
  a, b, c = _arange(3), _arange(2, 1), np.float32(5)
  out = jnp.broadcast_arrays(a, b, c)
  for o, e in zip(out, np.broadcast_arrays(a, b, c)):
    assert_close(o, e, np.float32)
  assert jnp.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
  assert jnp.broadcast_shapes(3, (2, 1)) == (2, 3)
  with pytest.raises(ValueError,
                     match=r"^Incompatible shapes for broadcasting: shapes=\[\(2,\), \(3,\)\](\n|$)"):
    jnp.broadcast_shapes((2,), (3,))
  with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: \(3,\)"):
    jnp.broadcast_to(np.ones(3), (4,))
  with pytest.raises(ValueError, match="Cannot broadcast to shape with fewer dimensions"):
    jnp.broadcast_to(np.ones((2, 3)), (3,))


# --- joining -----------------------------------------------------------------------------

@given(nums=st.lists(st.integers(0, 3), min_size=1, max_size=4), axis=st.integers(-2, 1),
       seed=st.integers(0, 2**16))
def test_concatenate_hypothesis(nums, axis, seed):
  rng = np.random.default_rng(seed)
  arrays = []
  for n in nums:
    shape = [2, 2]
    shape[axis] = n
    arrays.append(rand(rng, tuple(shape), np.float32))
  check_eager_and_jit(lambda *xs: jnp.concatenate(xs, axis), tuple(arrays),
                      np.concatenate(arrays, axis), np.float32)


def test_concatenate_promotion_and_axis_none():
  i, f = np.arange(3, dtype=np.int32), np.ones(2, np.float32)
  out = jnp.concatenate([i, f])
  assert out.dtype == np.float32
  assert_close(out, np.concatenate([i, f]).astype(np.float32))
  out = jnp.concatenate([np.ones(2, np.int8), np.ones(1, np.uint8)])
  assert out.dtype == np.int16
  weak = jnp.concatenate([lax.full((2,), 1.0), lax.full((1,), 2.0)])
  assert weak.weak_type
  assert jnp.concatenate([np.ones(2, np.int32)], dtype=np.float16).dtype == np.float16
  a, b = _arange(2, 2), _arange(3)
  check_eager_and_jit(lambda a, b: jnp.concatenate([a, b], axis=None), (a, b),
                      np.concatenate([a, b], axis=None), np.float32)
  assert_close(jnp.concatenate(_arange(2, 3)), np.concatenate(_arange(2, 3)), np.float32)
  assert_close(jnp.append(a, b), np.append(a, b), np.float32)
  assert_close(jnp.append(a, a, axis=1), np.append(a, a, axis=1), np.float32)


def test_concatenate_errors():
  with pytest.raises(ValueError, match="zero-dimensional"):
    jnp.concatenate([np.float32(1), np.float32(2)])
  with pytest.raises(ValueError, match="concatenate: all input array dimensions except"):
    jnp.concatenate([np.ones((2, 2)), np.ones((2, 3))])
  with pytest.raises(ValueError, match="concatenate: axis 2 is out of bounds"):
    jnp.concatenate([np.ones((2, 2)), np.ones((2, 2))], axis=2)
  with pytest.raises(ValueError, match="same number of dimensions"):
    jnp.concatenate([np.ones(2), np.ones((2, 2))])
  with pytest.raises(ValueError, match="at least one"):
    jnp.concatenate([])
  with pytest.raises(TypeError, match="concatenate requires ndarray"):
    jnp.concatenate([[1, 2], [3]])


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_stack(axis):
  a, b = _arange(2, 3), _arange(2, 3) + 10
  check_eager_and_jit(lambda a, b: jnp.stack([a, b], axis), (a, b), np.stack([a, b], axis),
                      np.float32)


def test_stack_variants_and_errors():
  a1, b1 = np.arange(3, dtype=np.float32), np.arange(3, dtype=np.float32) + 3
  a2, b2 = _arange(2, 3), _arange(2, 3) + 6
  for name in ("hstack", "vstack", "dstack", "column_stack"):
    for a, b in ((a1, b1), (a2, b2)):
      check_eager_and_jit(lambda a, b: getattr(jnp, name)([a, b]), (a, b),
                          getattr(np, name)([a, b]), np.float32)
  assert_close(jnp.hstack([np.float32(1), np.float32(2)]), np.hstack([1, 2]).astype(np.float32))
  assert jnp.stack([np.ones(2, np.int32), np.ones(2, np.float32)]).dtype == np.float32
  f = hlox.jit(lambda x: jnp.stack([x, x * 2]))
  assert_close(f(np.ones(2, np.float32)), np.array([[1, 1], [2, 2]], np.float32))
  with pytest.raises(ValueError, match="stack: all input arrays must have the same shape"):
    jnp.stack([np.ones(2), np.ones(3)])
  with pytest.raises(ValueError, match="stack: axis 3 is out of bounds"):
    jnp.stack([np.ones(2), np.ones(2)], axis=3)


# --- splitting ---------------------------------------------------------------------------

@pytest.mark.parametrize("arg,axis", [(3, 0), ([1, 4], 0), ([2, 2], 0), ([-2], 0), ([7, 8], 0),
                                      (2, 1), ([1], -1), (np.array([1, 3]), 0), ([4, 1], 0)])
def test_split(arg, axis):
  x = _arange(6, 4)
  out = jnp.split(x, arg, axis)
  expected = np.split(x, arg, axis)
  assert len(out) == len(expected)
  for o, e in zip(out, expected):
    assert_close(o, e, np.float32)
  jitted = hlox.jit(lambda x: jnp.split(x, arg, axis))(x)
  for o, e in zip(jitted, expected):
    assert_close(o, e, np.float32)


@pytest.mark.parametrize("sections", [1, 3, 4, 9])
def test_array_split(sections):
  x = np.arange(7, dtype=np.int32)
  out = jnp.array_split(x, sections)
  expected = np.array_split(x, sections)
  assert len(out) == len(expected)
  for o, e in zip(out, expected):
    assert_close(o, e, np.int32)


def test_split_variants_and_errors():
  x = _arange(4, 4, 2)
  for name in ("hsplit", "vsplit", "dsplit"):
    for o, e in zip(getattr(jnp, name)(x, 2), getattr(np, name)(x, 2)):
      assert_close(o, e, np.float32)
  with pytest.raises(ValueError, match="split: array split does not result in an equal"):
    jnp.split(np.arange(5), 2)
  with pytest.raises(ValueError, match="number of sections must be larger than 0"):
    jnp.array_split(np.arange(5), 0)
  with pytest.raises(ConcretizationTypeError, match="indices_or_sections"):
    hlox.jit(lambda x, i: jnp.split(x, i))(np.arange(4), np.array([1, 2]))


# --- tile / repeat -----------------------------------------------------------------------

@pytest.mark.parametrize("shape,reps", [((3,), 2), ((3,), (2, 2)), ((2, 3), (2,)),
                                        ((2, 3), (1, 2, 3)), ((2, 3), 0), ((), 3)])
def test_tile(shape, reps):
  x = _arange(*shape, dtype=np.int32) if shape else np.int32(7)
  check_eager_and_jit(lambda x: jnp.tile(x, reps), (x,), np.tile(x, reps), np.int32)


@pytest.mark.parametrize("repeats,axis", [(2, None), (3, 0), (2, 1), ([1, 0, 2], 1),
                                          (np.array([2, 1]), 0), (0, 1), ([2], 1)])
def test_repeat(repeats, axis):
  x = _arange(2, 3, dtype=np.int32)
  check_eager_and_jit(lambda x: jnp.repeat(x, repeats, axis), (x,), np.repeat(x, repeats, axis),
                      np.int32)


def test_repeat_total_length_method_and_errors():
  x = np.array([1, 2, 3], np.float32)
  assert_close(jnp.repeat(x, 2, total_repeat_length=4), np.array([1, 1, 2, 2], np.float32))
  assert_close(jnp.repeat(x, [1, 1, 1], total_repeat_length=5),
               np.array([1, 2, 3, 3, 3], np.float32))
  assert_close(jnp.asarray(x).repeat(2), np.repeat(x, 2))
  with pytest.raises(ValueError, match="repeat: 2 repeats given for an axis of size 3"):
    jnp.repeat(x, [1, 2])
  with pytest.raises(ValueError, match="negative"):
    jnp.repeat(x, -1)
  with pytest.raises(ConcretizationTypeError, match="repeats"):
    hlox.jit(lambda x, r: jnp.repeat(x, r))(x, 2)


# --- flip / rot90 / roll -----------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_flip(axis):
  x = _arange(2, 3, 4)
  check_eager_and_jit(lambda x: jnp.flip(x, axis), (x,), np.flip(x, axis), np.float32)


def test_fliplr_flipud_and_errors():
  x = _arange(3, 4)
  check_eager_and_jit(jnp.fliplr, (x,), np.fliplr(x), np.float32)
  check_eager_and_jit(jnp.flipud, (x,), np.flipud(x), np.float32)
  with pytest.raises(ValueError, match="fliplr: input must be at least 2-d"):
    jnp.fliplr(np.ones(3))
  with pytest.raises(ValueError, match="flip: axis 3 is out of bounds"):
    jnp.flip(x, 3)


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1])
@pytest.mark.parametrize("axes", [(1, 2), (2, 0)])
def test_rot90(k, axes):
  x = _arange(2, 3, 4)
  check_eager_and_jit(lambda x: jnp.rot90(x, k, axes), (x,), np.rot90(x, k, axes), np.float32)


def test_rot90_errors():
  with pytest.raises(ValueError, match="rot90: axes must be different"):
    jnp.rot90(np.ones((2, 2)), 1, (0, 0))
  with pytest.raises(ValueError, match="rot90 requires its first argument to have ndim at least two"):
    jnp.rot90(np.ones(3))


@pytest.mark.parametrize("shift,axis", [(2, None), (-1, None), (7, 0), (1, -1), ((1, 2), (0, 1)),
                                        ((1, 1), (1, 1)), (3, (0, 2)), (0, 1)])
def test_roll(shift, axis):
  x = _arange(2, 3, 4)
  check_eager_and_jit(lambda x: jnp.roll(x, shift, axis), (x,), np.roll(x, shift, axis),
                      np.float32)


def test_roll_errors():
  with pytest.raises(ValueError, match="roll: axis 3"):
    jnp.roll(np.ones((2, 2)), 1, 3)
  with pytest.raises(ValueError, match="matching lengths"):
    jnp.roll(np.ones((2, 2)), (1, 2, 3), (0, 1))


@pytest.mark.parametrize("shift,axis", [(2, 1), (-7, 0), (np.array([1, -2]), (0, 2)),
                                        (5, None)])
def test_roll_traced_shift(shift, axis):
  x = _arange(2, 3, 4)
  f = hlox.jit(lambda x, s: jnp.roll(x, s, axis))
  assert_close(f(x, shift), np.roll(x, shift, axis), np.float32)


# --- atleast_*, shape, ndim, size, astype ------------------------------------------------

@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(name):
  inputs = [np.float32(1), _arange(3), _arange(2, 3), _arange(2, 3, 4)]
  for x in inputs:
    check_eager_and_jit(getattr(jnp, name), (x,), getattr(np, name)(x), np.float32)
  outs = getattr(jnp, name)(*inputs)
  for o, e in zip(outs, getattr(np, name)(*inputs)):
    assert_close(o, e, np.float32)
  assert getattr(jnp, name)(1.0).weak_type


def test_shape_ndim_size():
  x = _arange(2, 3, 4)
  assert jnp.shape(x) == (2, 3, 4) and jnp.ndim(x) == 3 and jnp.size(x) == 24
  assert jnp.size(x, 1) == 3 and jnp.size(x, -1) == 4
  assert jnp.shape([[1, 2], [3, 4]]) == (2, 2) and jnp.ndim(3.0) == 0 and jnp.size(2) == 1

  def f(x):
    assert jnp.shape(x) == (2, 3, 4) and jnp.ndim(x) == 3 and jnp.size(x) == 24
    return x
  hlox.jit(f)(x)
  with pytest.raises(ValueError, match="size: axis 3"):
    jnp.size(x, 3)


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int32, np.float16),
                                     (np.float32, np.bool_), (np.complex64, np.float32),
                                     (np.uint8, np.int8), (np.float64, np.float64)])
def test_astype(src, dst):
  x = rand(np.random.default_rng(0), (2, 3), src)
  expected = (x.real if np.dtype(src).kind == "c" and np.dtype(dst).kind != "c" else x)
  expected = expected.astype(dst)
  dst_canonical = np.float32 if dst == np.float64 else dst
  out = check_eager_and_jit(lambda x: jnp.astype(x, dst), (x,), expected.astype(dst_canonical),
                            dst_canonical)
  assert not out.weak_type
  assert_close(jnp.asarray(x).astype(dst), expected.astype(dst_canonical), dst_canonical)


def test_astype_python_scalar():
  out = jnp.astype(3.7, jnp.int32)
  assert out.dtype == np.int32 and int(out) == 3


# --- insert / pad ------------------------------------------------------------------------

@pytest.mark.parametrize("obj,values,axis", [
    (2, 9, None), ([1, 3, 3], [7, 8, 9], None), (1, [7, 8], 1), ([1], [[7], [8]], 1),
    (1, 5, 0), (1, [1, 2, 3], 0), (-1, 0, 1), (3, [4, 5], 1), (slice(0, 2), 0, 1),
])
def test_insert(obj, values, axis):
  x = _arange(2, 3, dtype=np.int32)
  check_eager_and_jit(lambda x: jnp.insert(x, obj, values, axis), (x,),
                      np.insert(x, obj, values, axis), np.int32)


@pytest.mark.parametrize("pad_width", [(1, 2), ((0, 1), (2, 0)), [[3, 3]]])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad(pad_width, mode):
  x = _arange(3, 4) + 1
  check_eager_and_jit(lambda x: jnp.pad(x, pad_width, mode=mode), (x,),
                      np.pad(x, pad_width, mode=mode), np.float32)


def test_pad_large_reflections_and_constants():
  x = np.arange(1, 4, dtype=np.int32)
  for mode in ("reflect", "symmetric", "wrap", "edge"):
    assert_close(jnp.pad(x, (7, 8), mode=mode), np.pad(x, (7, 8), mode=mode), np.int32)
  y = _arange(2, 2)
  for cv in (5, ((1, 2), (3, 4)), (7, 8), [[9]]):
    check_eager_and_jit(lambda y: jnp.pad(y, ((1, 2), (2, 1)), constant_values=cv), (y,),
                        np.pad(y, ((1, 2), (2, 1)), constant_values=cv), np.float32)
  assert_close(jnp.pad(np.ones(2, np.int32), 1, constant_values=2.7), np.array([2, 1, 1, 2]),
               np.int32)
  f = hlox.jit(lambda y, v: jnp.pad(y, 1, constant_values=v))
  assert_close(f(y, np.float32(-1)), np.pad(y, 1, constant_values=-1), np.float32)
  assert_close(jnp.pad(y, 1, mode="empty").shape, (4, 4))
  assert_close(jnp.pad(np.zeros((0, 2)), 1), np.pad(np.zeros((0, 2)), 1).astype(np.float32))


def test_pad_errors():
  x = np.ones((2, 2))
  with pytest.raises(ValueError, match="pad: pad_width must be non-negative"):
    jnp.pad(x, -1)
  with pytest.raises(ValueError, match="pad_width"):
    jnp.pad(x, ((1, 2, 3),))
  with pytest.raises(NotImplementedError, match="Unimplemented padding mode 'bogus'"):
    jnp.pad(x, 1, mode="bogus")
  with pytest.raises(ValueError, match="unsupported keyword arguments"):
    jnp.pad(x, 1, mode="edge", constant_values=1)
  with pytest.raises(ValueError, match="can't extend empty axis 0"):
    jnp.pad(np.zeros((0, 2)), 1, mode="edge")


def test_x64_defaults():
  from hlox.config import enable_x64
  with enable_x64():
    assert jnp.zeros(3).dtype == np.float64
    assert jnp.array([1, 2]).dtype == np.int64
    assert jnp.array(np.arange(3.0)).dtype == np.float64
    assert jnp.arange(4).dtype == np.int64
    assert_close(jnp.arange(0, 1, 0.25), np.arange(0, 1, 0.25), np.float64)
    assert jnp.eye(2).dtype == np.float64
    assert jnp.linspace(0, 1, 3).dtype == np.float64
    assert jnp.concatenate([np.ones(2, np.int32), np.ones(2, np.int64)]).dtype == np.int64
  assert jnp.zeros(3).dtype == np.float32


def test_asarray_of_ml_dtypes_numpy_arrays():
  from hlox.core import dtypes
  for dt in (dtypes.bfloat16, dtypes.float8_e4m3fn):
    host = np.array([1.5, -2.0], dt)
    out = jnp.asarray(host)
    assert out.dtype == dt
    np.testing.assert_array_equal(np.asarray(out).astype(np.float32), host.astype(np.float32))
  cast = jnp.asarray(np.array([0.5, 3.0], np.float32), dtype=dtypes.bfloat16)
  assert cast.dtype == dtypes.bfloat16
  with pytest.raises(TypeError, match="cannot convert"):
    jnp.asarray(np.array([(1, 2)], dtype="i4,i4"))


def test_concat_is_its_own_function():
  # JAX's jnp.concat is the array API's spelling (axis by keyword), named ``concat``: code that
  # keys tests or dispatch on ``__name__`` (JAX's array_extensibility_test) needs the two apart.
  assert hlox.numpy.concat.__name__ == "concat"
  a, b = np.arange(4.0).reshape(2, 2), np.ones((2, 1))
  np.testing.assert_array_equal(hlox.numpy.concat([a, b], axis=1), np.concatenate([a, b], 1))
  with pytest.raises(TypeError):
    hlox.numpy.concat([a, b], 1)


class _EmptyShape:
  """A zero-length sequence by the old protocol only (``__len__`` + ``__getitem__``), like
  JAX's test-suite ``ScalarShape``."""

  def __len__(self):
    return 0

  def __getitem__(self, i):
    raise IndexError(i)


class _Size:
  def __init__(self, value):
    self.value = value

  def __index__(self):
    return self.value


def test_shapes_accept_any_sequence_and_index_objects():
  x = jnp.arange(6)
  assert jnp.arange(1).reshape(_EmptyShape()).shape == ()
  np.testing.assert_array_equal(np.asarray(jnp.reshape(x, (_Size(2), _Size(3)))),
                                np.arange(6).reshape(2, 3))
  assert jnp.reshape(x, _Size(6)).shape == (6,)
  assert x.reshape(_Size(3), -1).shape == (3, 2)
  assert jnp.zeros(_Size(3)).shape == (3,)
  assert jnp.broadcast_to(1.0, _EmptyShape()).shape == ()
  with pytest.raises(TypeError, match="reshape"):
    jnp.reshape(x, object())
  with pytest.raises(TypeError, match="Shapes must be"):
    jnp.zeros(object())

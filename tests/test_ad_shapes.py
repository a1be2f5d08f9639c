"""Autodiff rules of the shape primitives (``hlox/lax/shapes.py``): JVPs against finite
differences, transposes against the JVPs (``<ct, J t> == <J^T ct, t>``), second order, under
``jit``, explicit cotangents against NumPy, and the primitives a gradient's jaxpr holds."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.interpreters import ad

from check_grads import check_grads_x64
from util import assert_close

RNG = np.random.default_rng(0)


check = check_grads_x64


def vjp_of(f, x, ct):
  """The cotangent of ``x`` for output cotangent ``ct`` (eagerly and under jit: equal)."""
  eager = hlox.vjp(f, x)[1](ct)[0]
  jitted = hlox.jit(lambda x, ct: hlox.vjp(f, x)[1](ct)[0])(x, ct)
  assert_close(jitted, eager)
  return np.asarray(eager)


def grad_jaxpr_prims(f, x, ct):
  jaxpr = hlox.make_jaxpr(lambda x: hlox.vjp(f, x)[1](ct)[0])(x)
  return [str(e.primitive.name) for e in jaxpr.jaxpr.eqns]


# --- iota ----------------------------------------------------------------------------------

def test_iota_has_a_zero_tangent():
  out, t = ad.primitive_jvps[lax.iota_p]([], [], dtype=np.dtype(np.float32), shape=(3,),
                                         dimension=0, sharding=None)
  assert type(t) is ad.Zero and t.aval.shape == (3,)
  assert_close(out, np.arange(3, dtype=np.float32))
  f = lambda x: lax.concatenate([x, lax.iota(np.float32, 3)], 0)
  x = np.ones(2, np.float32)
  _, t = hlox.jvp(f, (x,), (np.full(2, 5, np.float32),))
  assert_close(t, np.array([5, 5, 0, 0, 0], np.float32))
  check(lambda x: lax.concatenate([x, lax.iota(x.dtype, 3)], 0), (RNG.standard_normal(2),))


# --- broadcast_in_dim ----------------------------------------------------------------------

@pytest.mark.parametrize("in_shape,shape,dims", [
    ((), (2, 3), ()),
    ((3,), (2, 3), (1,)),
    ((2, 1), (2, 4, 3), (0, 2)),
    ((1, 3), (4, 3), (0, 1)),
    ((1, 1), (1, 2, 1), (0, 2)),
])
def test_broadcast_in_dim_grads(in_shape, shape, dims):
  x = RNG.standard_normal(in_shape)
  f = lambda x: lax.broadcast_in_dim(x, shape, dims)
  check(f, (x,))
  # NumPy reference: the cotangent sums over the broadcast copies.
  ct = RNG.standard_normal(shape)
  with enable_x64():
    got = vjp_of(f, x, ct)
  stretched = [d for i, d in enumerate(dims) if in_shape[i] != shape[d]]
  axes = tuple(d for d in range(len(shape)) if d not in dims or d in stretched)
  expected = np.sum(ct, axis=axes, keepdims=True).reshape(in_shape)
  assert got.shape == in_shape
  assert_close(got, expected)


def test_broadcast_in_dim_gradient_is_a_reduce_sum():
  x = np.arange(3, dtype=np.float32)
  f = lambda x: lax.reduce_sum(lax.mul(lax.broadcast_in_dim(x, (4, 3), (1,)), 2.0), (0, 1))
  jaxpr = hlox.make_jaxpr(hlox.grad(f))(x)
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  # The cotangent of the broadcast sums over the new dimension.
  assert any(e.primitive is lax.reduce_sum_p and e.params["axes"] == (0,)
             for e in jaxpr.jaxpr.eqns), names
  assert_close(hlox.grad(f)(x), np.full(3, 8, np.float32))
  assert_close(hlox.jit(hlox.grad(f))(x), np.full(3, 8, np.float32))


# --- reshape / transpose / squeeze / expand_dims / rev -------------------------------------

@pytest.mark.parametrize("name,f,shape", [
    ("reshape", lambda x: lax.reshape(x, (3, 4)), (2, 6)),
    ("reshape_dims", lambda x: lax.reshape(x, (6, 2), dimensions=(1, 0)), (2, 6)),
    ("transpose", lambda x: lax.transpose(x, (2, 0, 1)), (2, 3, 4)),
    ("squeeze", lambda x: lax.squeeze(x, (0, 2)), (1, 3, 1, 2)),
    ("expand_dims", lambda x: lax.expand_dims(x, (0, 3)), (3, 2)),
    ("rev", lambda x: lax.rev(x, (0, 2)), (2, 3, 4)),
])
def test_data_movement_grads(name, f, shape):
  x = RNG.standard_normal(shape)
  check(f, (x,))
  # A pure permutation of elements: the cotangent is the inverse permutation of ct, which
  # is what a vjp with ct = f(range) recovers.
  with enable_x64():
    base = np.arange(x.size, dtype=np.float64).reshape(shape)
    ct = np.asarray(f(base))
    assert_close(vjp_of(f, x, ct), base)


def test_transpose_gradient_is_the_inverse_permutation():
  x = np.ones((2, 3, 4), np.float32)
  f = lambda x: lax.transpose(x, (2, 0, 1))
  jaxpr = hlox.make_jaxpr(lambda x: hlox.vjp(f, x)[1](np.ones((4, 2, 3), np.float32))[0])(x)
  last = jaxpr.jaxpr.eqns[-1]
  assert last.primitive is lax.transpose_p and last.params["permutation"] == (1, 2, 0)


# --- pad -----------------------------------------------------------------------------------

def _np_pad(x, value, config):
  """NumPy reference for lax.pad (negative edges crop)."""
  for axis, (lo, hi, interior) in enumerate(config):
    n = x.shape[axis]
    size = n + max(n - 1, 0) * interior
    shape = list(x.shape)
    shape[axis] = size
    y = np.full(shape, value, x.dtype)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(0, size, interior + 1)
    y[tuple(idx)] = x
    left = [slice(None)] * x.ndim
    if lo >= 0:
      pad_shape = list(shape)
      pad_shape[axis] = lo
      y = np.concatenate([np.full(pad_shape, value, x.dtype), y], axis)
    else:
      left[axis] = slice(-lo, None)
      y = y[tuple(left)]
    if hi >= 0:
      pad_shape = list(y.shape)
      pad_shape[axis] = hi
      y = np.concatenate([y, np.full(pad_shape, value, x.dtype)], axis)
    else:
      right = [slice(None)] * x.ndim
      right[axis] = slice(0, y.shape[axis] + hi)
      y = y[tuple(right)]
    x = y
  return x


@pytest.mark.parametrize("shape,config", [
    ((3,), ((1, 2, 0),)),
    ((4,), ((-1, -2, 0),)),
    ((3, 4), ((1, -1, 1), (-2, 2, 2))),
    ((2, 3), ((-3, 1, 2), (0, 0, 0))),
    ((0, 2), ((1, 1, 3), (1, 0, 1))),
])
def test_pad_grads(shape, config):
  x = RNG.standard_normal(shape)
  v = np.float64(RNG.standard_normal())
  check(lambda x, v: lax.pad(x, v, config), (x, v))
  check(lambda x: lax.pad(x, 0.0, config), (x,), order=1)
  # Cotangents against NumPy: the operand gets the positions it was copied to; the padding
  # value gets everything else.
  with enable_x64():
    out = _np_pad(x, v, config)
    ct = RNG.standard_normal(out.shape)
    ct_x, ct_v = hlox.vjp(lambda x, v: lax.pad(x, v, config), x, v)[1](ct)
    marks = _np_pad(np.arange(1, x.size + 1, dtype=np.float64).reshape(shape), 0.0, config)
    expected_x = np.zeros(x.size)
    np.add.at(expected_x, marks[marks > 0].astype(int) - 1, ct[marks > 0])
    assert_close(ct_x, expected_x.reshape(shape))
    assert_close(ct_v, np.sum(ct[marks == 0]))


def test_pad_gradient_slices_out_the_operand():
  f = lambda x: lax.pad(x, 0.0, ((1, 2, 1),))
  prims = grad_jaxpr_prims(f, np.ones(3, np.float32), np.ones(8, np.float32))
  assert prims[-2:] == ["pad", "slice"]  # crop the edges, then stride over the interior


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(-2, 2), st.integers(-2, 2),
                          st.integers(0, 2)), min_size=1, max_size=2))
def test_pad_grads_hypothesis(dims):
  shape = tuple(d for d, *_ in dims)
  config = tuple((lo, hi, i) for _, lo, hi, i in dims)
  sizes = [lo + hi + d + (d - 1) * i for d, lo, hi, i in dims]
  if min(sizes) < 0:
    return
  x = np.random.default_rng(len(shape)).standard_normal(shape)
  check(lambda x, v: lax.pad(x, v, config), (x, np.float64(0.5)), order=1)


# --- concatenate ---------------------------------------------------------------------------

def test_concatenate_grads():
  a, b, c = (RNG.standard_normal((2, n)) for n in (1, 3, 2))
  check(lambda a, b, c: lax.concatenate([a, b, c], 1), (a, b, c))
  # A constant operand gets no cotangent and does not disturb the others' slices.
  const = np.arange(4.0).reshape(2, 2)
  f = lambda b: lax.concatenate([const, b, const], 1)
  check(f, (b,))
  with enable_x64():
    ct = np.arange(14.0).reshape(2, 7)
    assert_close(vjp_of(f, b, ct), ct[:, 2:5])


# --- slice ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,start,limit,strides", [
    ((5,), (1,), (4,), None),
    ((7, 5), (1, 0), (7, 5), (2, 3)),
    ((6, 4), (2, 1), (2, 4), (1, 2)),  # empty result
    ((6,), (5,), (6,), (4,)),
])
def test_slice_grads(shape, start, limit, strides):
  x = RNG.standard_normal(shape)
  f = lambda x: lax.slice(x, start, limit, strides)
  check(f, (x,))
  with enable_x64():
    st_ = (1,) * len(shape) if strides is None else strides
    idx = tuple(slice(s, l, k) for s, l, k in zip(start, limit, st_))
    ct = RNG.standard_normal(x[idx].shape)
    expected = np.zeros(shape)
    expected[idx] = ct
    assert_close(vjp_of(f, x, ct), expected)


def test_slice_gradient_is_a_pad():
  f = lambda x: lax.slice(x, (1,), (6,), (2,))
  assert grad_jaxpr_prims(f, np.ones(8, np.float32), np.ones(3, np.float32))[-1] == "pad"


# --- compositions, jit, NumPy-level functions ----------------------------------------------

def test_grads_under_jit():
  def f(x):
    y = lax.transpose(lax.reshape(x, (3, 4)), (1, 0))
    y = lax.pad(lax.rev(y, (0,)), 1.0, ((1, 0, 1), (0, -1, 0)))
    return lax.concatenate([lax.slice(y, (0, 0), (8, 2), (1, 2)), y], 1)

  x = RNG.standard_normal((2, 6)).astype(np.float32)
  ct = RNG.standard_normal(f(x).shape).astype(np.float32)
  eager = hlox.vjp(f, x)[1](ct)[0]
  jitted = hlox.jit(lambda x, ct: hlox.vjp(f, x)[1](ct)[0])(x, ct)
  assert_close(jitted, eager)
  t_eager = hlox.jvp(f, (x,), (x,))[1]
  t_jit = hlox.jit(lambda x: hlox.jvp(f, (x,), (x,))[1])(x)
  assert_close(t_jit, t_eager)
  check(f, (x.astype(np.float64),))


@pytest.mark.parametrize("name", ["reshape", "transpose", "concatenate", "slice", "pad",
                                  "pad_edge", "squeeze_expand", "flip"])
def test_numpy_functions(name):
  fs = {
      "reshape": lambda x: jnp.reshape(x, (4, 3)),
      "transpose": lambda x: jnp.transpose(x),
      "concatenate": lambda x: jnp.concatenate([x, x[::-1], x[:, :1]], axis=1),
      "slice": lambda x: x[1:3, ::2],
      "pad": lambda x: jnp.pad(x, ((1, 2), (0, 3))),
      "pad_edge": lambda x: jnp.pad(x, ((1, 2), (2, 1)), mode="edge"),
      "squeeze_expand": lambda x: jnp.squeeze(jnp.expand_dims(x, 0), 0),
      "flip": lambda x: jnp.flip(x, 1),
  }
  check(fs[name], (RNG.standard_normal((3, 4)),))


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5),
                          st.integers(1, 3)), min_size=1, max_size=2))
def test_slice_grads_hypothesis(dims):
  shape = tuple(max(a, b) + 1 for a, b, _, _ in dims)
  start = tuple(min(a, b) for a, b, _, _ in dims)
  limit = tuple(max(a, b) for a, b, _, _ in dims)
  strides = tuple(s for *_, s in dims)
  x = np.random.default_rng(len(shape)).standard_normal(shape)
  check(lambda x: lax.slice(x, start, limit, strides), (x,), order=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16", np.complex64])
def test_cotangent_dtypes(dtype):
  dtype = hlox.numpy.dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)

  def f(x):
    y = lax.pad(lax.broadcast_in_dim(x, (2, 3), (1,)), np.zeros((), dtype)[()],
                ((0, 1, 1), (1, 0, 0)))
    return lax.concatenate([lax.rev(y, (1,)), lax.slice(y, (0, 0), (4, 4), (2, 1))], 0)

  x = np.arange(1, 4).astype(dtype)
  ct = np.ones(f(x).shape, dtype)
  got = vjp_of(f, x, ct)
  assert got.dtype == dtype
  # Each element of x has two copies in y (rows 0 and 2); both reach the output through
  # rev and again through the strided slice (which keeps rows 0 and 2).
  assert_close(got, np.full(3, 4.0, dtype), dtype, rtol=1e-2, atol=1e-2)


def test_complex_grads():
  x = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
  v = np.complex128(0.5 - 1j)
  check(lambda x, v: lax.pad(lax.transpose(x, (1, 0)), v, ((1, 0, 1), (-1, 1, 0))), (x, v))

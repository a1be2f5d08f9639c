"""hlox.numpy products (dot, matmul, vdot, tensordot, einsum, ...) and sorting, against NumPy."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox.core import dtypes

from tests.util import assert_close, check_eager_and_jit, rand


def _ref(fun, *args):
  """NumPy reference computed in float64/complex128/int64, so it is exact enough."""
  wide = [a.astype(np.complex128 if np.iscomplexobj(a) else
                   np.int64 if a.dtype.kind in "iub" and a.dtype != np.bool_ else np.float64)
          if isinstance(a, np.ndarray) else a for a in args]
  return fun(*wide)


# --- dot, matmul -------------------------------------------------------------------------

@pytest.mark.parametrize("a_shape,b_shape", [((), (3,)), ((2, 3), ()), ((4,), (4,)),
                                             ((2, 4), (4,)), ((4,), (4, 3)), ((2, 4), (4, 3)),
                                             ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 2))])
def test_dot(a_shape, b_shape):
  rng = np.random.default_rng(0)
  a, b = rand(rng, a_shape, np.float32), rand(rng, b_shape, np.float32)
  check_eager_and_jit(jnp.dot, (a, b), _ref(np.dot, a, b).astype(np.float32), np.float32)


@pytest.mark.parametrize("a_dtype,b_dtype", [(np.int32, np.int32), (np.int8, np.uint8),
                                             (np.int32, np.float32), (np.float16, np.float32),
                                             (np.bool_, np.bool_), (np.complex64, np.float32)])
def test_dot_promotion(a_dtype, b_dtype):
  rng = np.random.default_rng(1)
  a, b = rand(rng, (3, 4), a_dtype), rand(rng, (4, 2), b_dtype)
  expected_dtype = dtypes.result_type(a_dtype, b_dtype)
  expected = np.dot(a.astype(expected_dtype), b.astype(expected_dtype))
  out = check_eager_and_jit(jnp.dot, (a, b), expected, expected_dtype, rtol=1e-3, atol=1e-3)
  assert out.dtype == expected_dtype


def test_dot_weak_scalar_and_preferred():
  x = np.arange(3, dtype=np.int32)
  out = jnp.dot(x, 2.0)  # a weak float scalar makes the int array's product float
  assert out.dtype == np.float32
  assert_close(out, x * 2.0, np.float32)
  assert hlox.make_jaxpr(lambda v: jnp.dot(v, v))(2.0).out_avals[0].weak_type
  a = np.full((2, 3), 100, np.int8)
  out = jnp.dot(a, a.T, preferred_element_type=np.int32)
  assert_close(out, np.full((2, 2), 30000, np.int32), np.int32)
  text = str(hlox.make_jaxpr(jnp.dot)(np.ones((2, 3), np.float32), np.ones(3, np.float32)))
  assert ("dot_general[\n      dimension_numbers=(([1], [0]), ([], []))\n"
          "      preferred_element_type=float32\n    ]") in text


def test_dot_errors():
  # A TypeError in dot_general's words, as JAX's.
  with pytest.raises(TypeError, match=r"dot: dot_general requires contracting dimensions to "
                                      r"have the same shape, got \(3,\) and \(4,\).*aligned"):
    jnp.dot(np.ones((2, 3)), np.ones((4, 2)))
  with pytest.raises(TypeError, match="dot"):
    jnp.dot("a", np.ones(3))


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)),
                 ((1, 2, 3), (5, 3, 2)), ((7, 1, 2, 3), (1, 6, 3, 4)), ((1, 1, 2, 3), (1, 3, 1)),
                 ((2, 0, 3), (3, 4)), ((0, 2, 3), (1, 3, 2))]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
def test_matmul(a_shape, b_shape):
  rng = np.random.default_rng(2)
  a, b = rand(rng, a_shape, np.float32), rand(rng, b_shape, np.float32)
  check_eager_and_jit(jnp.matmul, (a, b), _ref(np.matmul, a, b).astype(np.float32), np.float32)


@given(batch_a=st.lists(st.integers(1, 3), max_size=2), batch_b=st.lists(st.integers(1, 3),
                                                                          max_size=2),
       m=st.integers(1, 3), k=st.integers(1, 3), n=st.integers(1, 3), ones=st.booleans())
def test_matmul_broadcasting_hypothesis(batch_a, batch_b, m, k, n, ones):
  if ones:  # force broadcasting against size-1 dims
    batch_a = [1 if i % 2 else d for i, d in enumerate(batch_a)]
  nb = min(len(batch_a), len(batch_b))
  for i in range(1, nb + 1):  # make the batch shapes broadcast-compatible
    if batch_a[-i] != batch_b[-i] and 1 not in (batch_a[-i], batch_b[-i]):
      batch_b[-i] = batch_a[-i]
  rng = np.random.default_rng(len(batch_a) * 7 + m)
  a = rand(rng, (*batch_a, m, k), np.int32, -5, 5)
  b = rand(rng, (*batch_b, k, n), np.int32, -5, 5)
  assert_close(jnp.matmul(a, b), np.matmul(a, b), np.int32)


def test_matmul_operator_and_method():
  rng = np.random.default_rng(3)
  a, b = rand(rng, (2, 3), np.float32), rand(rng, (3, 2), np.float32)
  x = hlox.device_put(a)
  assert_close(x @ b, _ref(np.matmul, a, b), np.float32)
  assert_close(b @ x, _ref(np.matmul, b, a), np.float32)
  assert_close(hlox.jit(lambda u, v: u @ v)(x, b), _ref(np.matmul, a, b), np.float32)
  assert_close(x.dot(b), _ref(np.dot, a, b), np.float32)


def test_matmul_errors():
  with pytest.raises(ValueError, match="matmul.*ndim at least 1"):
    jnp.matmul(np.float32(2), np.ones(3, np.float32))
  with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape, got \(3,\) and \(4,\)"):
    jnp.matmul(np.ones((2, 3)), np.ones((4, 2)))
  with pytest.raises(ValueError, match="matmul.*broadcast"):
    jnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))


# --- vdot, vecdot, outer, inner, kron ----------------------------------------------------

def test_vdot_conjugates_and_flattens():
  rng = np.random.default_rng(4)
  a, b = rand(rng, (2, 3), np.complex64), rand(rng, (3, 2), np.complex64)
  check_eager_and_jit(jnp.vdot, (a, b), _ref(np.vdot, a, b).astype(np.complex64), np.complex64)
  x, y = rand(rng, (4,), np.float32), rand(rng, (2, 2), np.float32)
  check_eager_and_jit(jnp.vdot, (x, y), _ref(np.vdot, x, y).astype(np.float32), np.float32)
  with pytest.raises(ValueError, match="vdot"):
    jnp.vdot(np.ones(3), np.ones(4))


def test_vecdot():
  rng = np.random.default_rng(5)
  a, b = rand(rng, (2, 1, 3), np.complex64), rand(rng, (4, 3), np.complex64)
  expected = np.sum(np.conj(a) * b, axis=-1)
  check_eager_and_jit(jnp.vecdot, (a, b), expected, np.complex64)
  a, b = rand(rng, (3, 2), np.float32), rand(rng, (3, 2), np.float32)
  assert_close(jnp.vecdot(a, b, axis=0), np.sum(a * b, axis=0), np.float32)
  with pytest.raises(ValueError, match="vecdot"):
    jnp.vecdot(np.ones((3, 2)), np.ones((3, 3)))


def test_outer_inner_kron():
  rng = np.random.default_rng(6)
  a, b = rand(rng, (2, 3), np.float32), rand(rng, (4,), np.int32)
  check_eager_and_jit(jnp.outer, (a, b), np.outer(a, b).astype(np.float32), np.float32)
  c, d = rand(rng, (2, 3), np.float32), rand(rng, (4, 3), np.float32)
  check_eager_and_jit(jnp.inner, (c, d), _ref(np.inner, c, d).astype(np.float32), np.float32)
  assert_close(jnp.inner(np.float32(2), c), 2 * c, np.float32)
  e, f = rand(rng, (2, 3), np.int32), rand(rng, (3, 1, 2), np.int32)
  check_eager_and_jit(jnp.kron, (e, f), np.kron(e, f), np.int32)


# --- tensordot ---------------------------------------------------------------------------

@pytest.mark.parametrize("a_shape,b_shape,axes", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (4, 5), 0), ((3, 4), (4, 5), 1),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((2, 3, 4), (5, 2), (0, -1)),
    ((2, 3, 4), (4, 2), ((-1, 0), (0, 1)))])
def test_tensordot(a_shape, b_shape, axes):
  rng = np.random.default_rng(7)
  a, b = rand(rng, a_shape, np.float32), rand(rng, b_shape, np.float32)
  check_eager_and_jit(lambda x, y: jnp.tensordot(x, y, axes), (a, b),
                      _ref(np.tensordot, a, b, axes).astype(np.float32), np.float32)


def test_tensordot_errors():
  a, b = np.ones((2, 3)), np.ones((3, 4))
  with pytest.raises(TypeError, match="tensordot"):
    jnp.tensordot(a, b, 3)
  with pytest.raises(TypeError, match="equal length"):
    jnp.tensordot(a, b, ([0, 1], [0]))
  with pytest.raises(TypeError, match="tensordot"):
    jnp.tensordot(a, b, "ij")
  with pytest.raises(TypeError, match="tensordot.*not aligned"):
    jnp.tensordot(a, b, ([0], [0]))


# --- einsum ------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("i,j->ij", [(3,), (4,)]), ("i,i->", [(5,), (5,)]), ("i,i", [(5,), (5,)]),
    ("ijk,kl,lm->im", [(2, 3, 4), (4, 5), (5, 2)]), ("ab,cd,bd->ac", [(2, 3), (4, 5), (3, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("...i->...", [(2, 3, 4)]),
    ("i...->...", [(2, 3, 4)]), ("ij,ij->ij", [(1, 3), (2, 3)]), ("bhqd,bhkd->bhqk",
                                                                  [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ba,ca->bc", [(3, 2), (4, 2)]), ("i,jk,k->ij", [(2,), (3, 4), (4,)]),
    ("ijk->kji", [(2, 3, 4)]), ("ii->", [(0, 0)]), ("ij , jk -> ik", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM_CASES)
def test_einsum(spec, shapes):
  rng = np.random.default_rng(8)
  ops = [rand(rng, s, np.float32) for s in shapes]
  expected = np.einsum(spec, *[o.astype(np.float64) for o in ops]).astype(np.float32)
  check_eager_and_jit(lambda *xs: jnp.einsum(spec, *xs), ops, expected, np.float32,
                      rtol=1e-5, atol=1e-5)


def test_einsum_dtypes_and_options():
  rng = np.random.default_rng(9)
  a, b = rand(rng, (2, 3), np.int32), rand(rng, (3, 2), np.float32)
  out = jnp.einsum("ij,jk->ik", a, b, optimize="greedy", precision="highest")
  assert_close(out, a @ b.astype(np.float64), np.float32)
  c = rand(rng, (3, 3), np.int8, 50, 100)
  out = jnp.einsum("ij,jk->ik", c, c, preferred_element_type=np.int32)
  assert_close(out, c.astype(np.int32) @ c.astype(np.int32), np.int32)
  # Sums over a label happen in the result dtype; booleans combine with "or".
  assert_close(jnp.einsum("ij->", c, preferred_element_type=np.int32), int(c.astype(int).sum()),
               np.int32)
  m = np.array([[True, False], [False, False]])
  assert_close(jnp.einsum("ij->i", m), [True, False], np.bool_)
  assert_close(jnp.einsum("ij,jk->ik", m, m), m, np.bool_)
  # A diagonal taken with a repeated label keeps inf (no inf * 0 = nan).
  d = np.array([[np.inf, 1.0], [2.0, 3.0]], np.float32)
  assert_close(jnp.einsum("ii->i", d), [np.inf, 3.0], np.float32)
  # The interleaved sublist form.
  e, f = rand(rng, (2, 3), np.float32), rand(rng, (3, 4), np.float32)
  assert_close(jnp.einsum(e, [0, 1], f, [1, 2], [0, 2]), _ref(np.matmul, e, f), np.float32)
  assert_close(jnp.einsum(e, [Ellipsis, 1], f, [1, 2]), _ref(np.matmul, e, f), np.float32)


@pytest.mark.parametrize("spec,shapes,match", [
    ("ij,jk->ik", [(2, 3)], "name 2 operands but 1"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "size of label 'j'"),
    ("ijk->i", [(2, 3)], "operand 0 has 2 dimensions"),
    ("ij->iz", [(2, 3)], "output subscript 'z'"),
    ("ij->ii", [(2, 3)], "repeat"),
    ("i1->i", [(2, 3)], "invalid subscript"),
])
def test_einsum_errors(spec, shapes, match):
  with pytest.raises(ValueError, match=match):
    jnp.einsum(spec, *[np.ones(s, np.float32) for s in shapes])


# --- trace -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,offset,axis1,axis2", [((4, 5), 0, 0, 1), ((4, 5), 2, 0, 1),
                                                      ((4, 5), -1, 0, 1), ((3, 4, 5), 1, 2, 0),
                                                      ((4, 5), 7, 0, 1)])
def test_trace(shape, offset, axis1, axis2):
  rng = np.random.default_rng(10)
  x = rand(rng, shape, np.float32)
  fun = lambda a: jnp.trace(a, offset, axis1, axis2)
  check_eager_and_jit(fun, (x,), np.trace(x, offset, axis1, axis2), np.float32)


def test_trace_dtypes():
  x = np.arange(9, dtype=np.int8).reshape(3, 3) * 10
  check_eager_and_jit(jnp.trace, (x,), np.trace(x.astype(np.int32)), np.int32)  # widened
  b = np.eye(3, dtype=bool)
  check_eager_and_jit(jnp.trace, (b,), 3, np.int32)
  assert_close(jnp.trace(x, dtype=np.float32), 120.0, np.float32)
  assert_close(hlox.device_put(x).trace(), 120, np.int32)
  with pytest.raises(ValueError, match="trace"):
    jnp.trace(np.ones(3))


# --- sorting -----------------------------------------------------------------------------

_with_nans = np.array([[3., np.nan, 1., 1., -2., -0.0], [0., 5., np.inf, -1., 2., -np.inf]],
                      np.float32)


@pytest.mark.parametrize("axis", [-1, 0, 1, None])
def test_sort(axis):
  check_eager_and_jit(lambda a: jnp.sort(a, axis=axis), (_with_nans,),
                      np.sort(_with_nans, axis=axis), np.float32)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.complex64, np.float16])
def test_sort_dtypes(dtype):
  rng = np.random.default_rng(11)
  x = rand(rng, (3, 5), dtype, -5, 5)
  check_eager_and_jit(jnp.sort, (x,), np.sort(x), dtype)


def test_sort_descending():
  x = _with_nans
  out = check_eager_and_jit(lambda a: jnp.sort(a, descending=True), (x,),
                            np.flip(np.sort(x), -1), np.float32)
  assert np.isnan(np.asarray(out)[0, 0])
  assert_close(jnp.sort(x, axis=0, descending=True, stable=False),
               np.flip(np.sort(x, axis=0), 0), np.float32)


def test_sort_method_and_errors():
  x = hlox.device_put(_with_nans)
  assert_close(x.sort(), np.sort(_with_nans), np.float32)
  assert_close(x.argsort(axis=0), np.argsort(_with_nans, axis=0, kind="stable"), np.int32)
  with pytest.raises(TypeError, match="kind"):
    jnp.sort(_with_nans, kind="quicksort")
  with pytest.raises(TypeError, match="order"):
    jnp.argsort(_with_nans, order="x")
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.sort(_with_nans, axis=2)
  with pytest.raises(ValueError, match="0-d"):
    jnp.sort(np.float32(1.0))
  assert_close(jnp.sort(np.float32(1.0), axis=None), [1.0], np.float32)


@given(values=st.lists(st.integers(0, 3), min_size=0, max_size=12))
def test_argsort_stable_matches_numpy(values):
  x = np.array(values, np.int32)
  assert_close(jnp.argsort(x), np.argsort(x, kind="stable"), np.int32)
  # Descending keeps equal entries in their original order too.
  assert_close(jnp.argsort(x, descending=True), np.argsort(-x, kind="stable"), np.int32)


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_argsort(axis):
  rng = np.random.default_rng(12)
  x = rng.integers(0, 4, size=(4, 6)).astype(np.float32)
  x[1, 2] = np.nan
  check_eager_and_jit(lambda a: jnp.argsort(a, axis=axis), (x,),
                      np.argsort(x, axis=axis, kind="stable"), np.int32)
  out = jnp.argsort(x, axis=axis, dtype=np.int16)
  assert out.dtype == np.int16


def test_lexsort():
  rng = np.random.default_rng(13)
  k1, k2 = rng.integers(0, 3, 10).astype(np.int32), rng.integers(0, 3, 10).astype(np.float32)
  check_eager_and_jit(lambda a, b: jnp.lexsort((a, b)), (k1, k2), np.lexsort((k1, k2)),
                      np.int32)
  stacked = rng.integers(0, 3, (3, 2, 8)).astype(np.int32)
  assert_close(jnp.lexsort(stacked), np.lexsort(stacked), np.int32)
  assert_close(jnp.lexsort(stacked, axis=0), np.lexsort(stacked, axis=0), np.int32)
  with pytest.raises(ValueError, match="same shape"):
    jnp.lexsort((np.ones(3), np.ones(4)))


@pytest.mark.parametrize("kth", [0, 3, -1])
def test_partition(kth):
  rng = np.random.default_rng(14)
  x = rand(rng, (3, 7), np.float32)
  for fun in (jnp.partition, hlox.jit(jnp.partition, static_argnums=1)):
    out = np.asarray(fun(x, kth))
    ref = np.partition(x, kth)
    k = kth % 7
    assert_close(out[:, k], ref[:, k], np.float32)
    assert (out[:, :k] <= out[:, k:k + 1]).all() and (out[:, k + 1:] >= out[:, k:k + 1]).all()
    assert_close(np.sort(out, -1), np.sort(x, -1), np.float32)
  idx = np.asarray(jnp.argpartition(x, kth))
  assert_close(np.take_along_axis(x, idx, -1)[:, kth % 7], np.partition(x, kth)[:, kth % 7],
               np.float32)
  with pytest.raises(ValueError, match="kth"):
    jnp.partition(x, 7)


def test_sort_complex():
  x = np.array([3, 1, 2], np.int32)
  out = jnp.sort_complex(x)
  assert out.dtype == np.complex64
  assert_close(out, np.sort_complex(x).astype(np.complex64), np.complex64)


def test_unique():
  x = np.array([[3, 1], [3, 2], [1, 1]], np.int32)
  values, index, inverse, counts = jnp.unique(x, return_index=True, return_inverse=True,
                                              return_counts=True)
  ref = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
  for got, want in zip((values, index, inverse, counts), ref):
    assert_close(got, np.reshape(want, np.shape(got)), np.int32)
  assert_close(jnp.unique(x, size=5, fill_value=-1), [1, 2, 3, -1, -1], np.int32)
  assert_close(jnp.unique(x, size=2), [1, 2], np.int32)
  assert_close(jnp.unique(x, axis=0), np.unique(x, axis=0), np.int32)
  with pytest.raises(hlox.errors.ConcretizationTypeError, match="unique"):
    hlox.jit(jnp.unique)(x)


# --- searching, sets, histograms, polynomials, index helpers (searching/setops/... .py) --

def test_nonzero_sized_under_jit():
  x = np.array([[0, 3, 0], [2, 0, 5]], np.int32)
  rows, cols = np.nonzero(x)
  f = lambda v: jnp.nonzero(v, size=4, fill_value=-1)
  for out in (f(x), hlox.jit(f)(x)):
    assert_close(out[0], np.array([*rows, -1], np.int32), np.int32)
    assert_close(out[1], np.array([*cols, -1], np.int32), np.int32)
  assert_close(hlox.jit(lambda v: jnp.argwhere(v, size=2))(x), np.argwhere(x)[:2], np.int32)
  assert_close(jnp.flatnonzero(x), np.flatnonzero(x), np.int32)
  with pytest.raises(ValueError, match="0d"):
    jnp.nonzero(jnp.array(1))


def test_unique_sized_under_jit():
  x = np.array([3, 1, 3, 2, 1], np.int32)
  f = lambda v: jnp.unique(v, size=5, fill_value=0, return_index=True, return_inverse=True,
                           return_counts=True)
  values, index, inverse, counts = hlox.jit(f)(x)
  assert_close(values, np.array([1, 2, 3, 0, 0], np.int32), np.int32)
  assert_close(index, np.array([1, 3, 0, 1, 1], np.int32), np.int32)
  assert_close(inverse, np.array([2, 0, 2, 1, 0], np.int32), np.int32)
  assert_close(counts, np.array([2, 1, 2, 0, 0], np.int32), np.int32)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_digitize(side):
  a = np.array([1., 2., 2., 3., np.nan], np.float32)
  v = np.array([[0., 2.], [2.5, np.nan]], np.float32)
  check_eager_and_jit(lambda a, v: jnp.searchsorted(a, v, side=side), [a, v],
                      np.searchsorted(a, v, side=side).astype(np.int32), np.int32)
  bins = np.array([0., 1., 2.5, 4.], np.float32)
  x = np.array([-1., 0., 1., 2.6, 9.], np.float32)
  check_eager_and_jit(lambda x: jnp.digitize(x, bins, right=side == "right"), [x],
                      np.digitize(x, bins, right=side == "right").astype(np.int32), np.int32)


def test_diff_interp_polyval_histogram():
  x = np.array([1., 4., 9., 16., 30.], np.float32)
  check_eager_and_jit(lambda v: jnp.diff(v, n=2, prepend=0.), [x], np.diff(x, 2, prepend=0.),
                      np.float32)
  xp, fp = np.array([1., 2., 4.], np.float32), np.array([0., 10., -2.], np.float32)
  q = np.array([0., 1.5, 3., 5.], np.float32)
  check_eager_and_jit(lambda q: jnp.interp(q, xp, fp), [q], np.interp(q, xp, fp), np.float32)
  check_eager_and_jit(lambda v: jnp.polyval(jnp.array([2., 0., -1.]), v), [x],
                      np.polyval([2., 0., -1.], x), np.float32, rtol=1e-6)
  counts, edges = jnp.histogram(x, bins=3)
  ref_counts, ref_edges = np.histogram(x, bins=3)
  assert_close(counts, ref_counts.astype(np.float32), np.float32)
  assert_close(edges, ref_edges.astype(np.float32), np.float32)
  assert_close(jnp.bincount(jnp.array([0, 1, 1, 4])), np.bincount([0, 1, 1, 4]), np.int32)


def test_set_ops_and_index_helpers():
  a, b = np.array([3, 1, 2, 5], np.int32), np.array([2, 1, 7], np.int32)
  assert_close(jnp.isin(a, b), np.isin(a, b), np.bool_)
  assert_close(jnp.union1d(a, b), np.union1d(a, b), np.int32)
  assert_close(jnp.intersect1d(a, b), np.intersect1d(a, b), np.int32)
  assert_close(jnp.setdiff1d(a, b), np.setdiff1d(a, b), np.int32)
  rows, cols = jnp.unravel_index(jnp.array([0, 5, 11]), (3, 4))
  assert_close(rows, np.array([0, 1, 2], np.int32), np.int32)
  assert_close(cols, np.array([0, 1, 3], np.int32), np.int32)
  assert_close(jnp.ravel_multi_index((jnp.array([0, 2]), jnp.array([1, 3])), (3, 4)),
               np.array([1, 11], np.int32), np.int32)
  for got, ref in zip(jnp.tril_indices(3, -1), np.tril_indices(3, -1)):
    assert_close(got, ref.astype(np.int32), np.int32)
  c = jnp.select([jnp.arange(4) < 1, jnp.arange(4) > 2], [jnp.arange(4), -jnp.arange(4)], 9)
  assert_close(c, np.array([0, 9, 9, -3], np.int32), np.int32)


def test_quantiles_cov_cross_convolve():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(3, 5)).astype(np.float32)
  for method in ("linear", "lower", "higher", "midpoint", "nearest"):
    assert_close(jnp.quantile(x, jnp.array([0.2, 0.9]), axis=1, method=method),
                 np.quantile(x, [0.2, 0.9], axis=1, method=method), np.float32, rtol=1e-5)
  y = x.copy()
  y[0, 1] = np.nan
  assert_close(jnp.nanmedian(y, axis=1), np.nanmedian(y, axis=1), np.float32, rtol=1e-5)
  assert_close(jnp.percentile(x, 30.), np.percentile(x, 30.), np.float32, rtol=1e-5)
  assert_close(jnp.cov(x), np.cov(x), np.float32, rtol=1e-4, atol=1e-5)
  assert_close(jnp.corrcoef(x), np.corrcoef(x), np.float32, rtol=1e-4, atol=1e-5)
  assert_close(jnp.cross(x[:, :3], x[::-1, :3]), np.cross(x[:, :3], x[::-1, :3]), np.float32,
               rtol=1e-5, atol=1e-6)
  for mode in ("full", "same", "valid"):
    assert_close(jnp.convolve(x[0], x[1, :3], mode=mode), np.convolve(x[0], x[1, :3], mode),
                 np.float32, rtol=1e-5, atol=1e-6)
    assert_close(jnp.correlate(x[0], x[1, :3], mode=mode), np.correlate(x[0], x[1, :3], mode),
                 np.float32, rtol=1e-5, atol=1e-6)


def test_pad_stat_and_ramp_modes():
  x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
  for mode in ("maximum", "minimum", "mean", "median"):
    assert_close(jnp.pad(x, ((1, 2), (2, 1)), mode=mode, stat_length=2),
                 np.pad(x, ((1, 2), (2, 1)), mode=mode, stat_length=2), np.float32, rtol=1e-6)
  assert_close(jnp.pad(x, 2, mode="linear_ramp", end_values=(1, -2)),
               np.pad(x, 2, mode="linear_ramp", end_values=(1, -2)), np.float32, rtol=1e-5)


def test_scalar_type_constructors_make_arrays():
  x = jnp.float32(3)
  assert isinstance(x, hlox.Array) and x.dtype == np.float32 and not x.weak_type
  assert jnp.int32(1) * 1.5 == 1.5 and (jnp.int32(1) * 1.5).dtype == np.float32
  assert np.dtype(jnp.bfloat16) == dtypes.bfloat16 and jnp.float32 == np.float32
  assert isinstance(np.float32(1), jnp.float32)
  assert jnp.isdtype(jnp.bfloat16, "real floating") and not jnp.isdtype(jnp.bool_, "numeric")


# --- hlox.numpy.linalg ---------------------------------------------------------------------

def test_linalg_lu_based_against_numpy():
  rng = np.random.default_rng(1)
  a = rng.normal(size=(2, 4, 4)).astype(np.float32)
  b = rng.normal(size=(2, 4, 3)).astype(np.float32)
  check_eager_and_jit(jnp.linalg.det, [a], np.linalg.det(a), np.float32, rtol=1e-4, atol=1e-5)
  sign, logdet = jnp.linalg.slogdet(a)
  ref_sign, ref_logdet = np.linalg.slogdet(a)
  assert_close(sign, ref_sign.astype(np.float32), np.float32)
  assert_close(logdet, ref_logdet.astype(np.float32), np.float32, rtol=1e-4, atol=1e-5)
  check_eager_and_jit(jnp.linalg.solve, [a, b], np.linalg.solve(a, b), np.float32, rtol=1e-3,
                      atol=1e-4)
  check_eager_and_jit(jnp.linalg.inv, [a], np.linalg.inv(a), np.float32, rtol=1e-3, atol=1e-4)
  spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4, dtype=np.float32)
  check_eager_and_jit(jnp.linalg.cholesky, [spd], np.linalg.cholesky(spd), np.float32,
                      rtol=1e-4, atol=1e-5)
  assert_close(jnp.linalg.det(np.array([[1., 2.], [2., 4.]], np.float32)), np.float32(0))
  with pytest.raises(ValueError, match="square"):
    jnp.linalg.det(jnp.ones((2, 3)))


@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3])
def test_linalg_vector_norm(ord):
  x = np.array([[3., -4., 0.], [1., 2., -2.]], np.float32)
  check_eager_and_jit(lambda v: jnp.linalg.norm(v, ord=ord, axis=1), [x],
                      np.linalg.norm(x, ord=ord, axis=1), np.float32, rtol=1e-6)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
def test_linalg_matrix_norm(ord):
  x = np.array([[3., -4., 0.], [1., 2., -2.]], np.float32)
  check_eager_and_jit(lambda v: jnp.linalg.norm(v, ord=ord), [x], np.linalg.norm(x, ord=ord),
                      np.float32, rtol=1e-6)

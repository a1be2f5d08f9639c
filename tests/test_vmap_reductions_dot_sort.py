"""vmap of reductions, windowed/cumulative reductions, dot_general, sort and top_k.

Each batched primitive is checked against a Python loop over the examples (eagerly and under
``jit``), for batch dimensions in several positions, unbatched operands and empty batches;
NumPy-level functions built on them are checked against NumPy.
"""
import functools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.lax import windowed
from tests.util import assert_close, rand


def _take(x, axis, i):
  return x if axis is None else np.take(x, i, axis=axis)


def _size(args, in_axes):
  return next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)


def _flat(out):
  return list(out) if isinstance(out, (tuple, list)) else [out]


def loop_reference(f, args, in_axes):
  """``f`` applied to each example (a Python loop) and the results stacked."""
  size = _size(args, in_axes)
  if size == 0:
    # An empty stack: shapes from one example of zeros.
    one = [a if d is None else np.zeros(np.delete(np.shape(a), d), np.asarray(a).dtype)
           for a, d in zip(args, in_axes)]
    return [np.zeros((0,) + np.shape(o), np.asarray(o).dtype) for o in _flat(f(*one))]
  outs = [_flat(f(*[_take(a, d, i) for a, d in zip(args, in_axes)])) for i in range(size)]
  return [np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0]))]


def check_vmap(f, args, in_axes, **tol):
  """``vmap(f)`` eagerly and under jit equals the loop over examples."""
  expected = loop_reference(f, args, in_axes)
  vf = hlox.vmap(f, in_axes=tuple(in_axes))
  for got in (vf(*args), hlox.jit(vf)(*args)):
    got = _flat(got)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
      assert_close(g, e, e.dtype, **tol)
  return expected


def batched(rng, shape, dtype, bdim, size=3, **kw):
  """A random stack of ``size`` examples of ``shape`` with the batch axis at ``bdim``."""
  if bdim is None:
    return rand(rng, shape, dtype, **kw)
  full = shape[:bdim] + (size,) + shape[bdim:]
  return rand(rng, full, dtype, **kw)


# --- reductions --------------------------------------------------------------------------

_monoids = [(lax.reduce_sum, np.float32), (lax.reduce_prod, np.float32),
            (lax.reduce_max, np.int32), (lax.reduce_min, np.float32),
            (lax.reduce_and, np.bool_), (lax.reduce_or, np.int32), (lax.reduce_xor, np.bool_)]


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("reducer,dtype", _monoids, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("bdim,axes", [(0, (1,)), (1, (0, 2)), (3, (2,)), (2, ()),
                                       (1, (0, 1, 2))])
def test_monoid_reductions(reducer, dtype, bdim, axes):
  rng = np.random.default_rng(0)
  x = batched(rng, (2, 3, 2), dtype, bdim, low=-2, high=3)
  expected = check_vmap(lambda v: reducer(v, axes), [x], [bdim])
  if reducer is lax.reduce_sum:
    assert_close(expected[0], np.sum(np.moveaxis(x, bdim, 0), tuple(a + 1 for a in axes)))


@given(st.data())
def test_reduce_sum_max_random_axes(data):
  shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
  bdim = data.draw(st.integers(0, len(shape)))
  axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
  x = batched(np.random.default_rng(1), shape, np.float32, bdim, size=2)
  stacked = np.moveaxis(x, bdim, 0)
  got = hlox.vmap(lambda v: (lax.reduce_sum(v, axes), lax.reduce_max(v, axes)),
                  in_axes=bdim)(x)
  np_axes = tuple(a + 1 for a in axes)
  assert_close(got[0], np.sum(stacked, np_axes), np.float32)
  assert_close(got[1], np.max(stacked, np_axes), np.float32)


def test_reduction_size_zero_batch():
  x = np.zeros((0, 3, 4), np.float32)
  check_vmap(lambda v: lax.reduce_sum(v, (1,)), [x], [0])
  check_vmap(lambda v: lax.argmax(v, 0, np.int32), [x], [0])


@pytest.mark.parametrize("prim", [lax.argmax, lax.argmin])
@pytest.mark.parametrize("bdim,axis", [(0, 0), (0, 1), (1, 0), (2, 1), (2, 0)])
def test_argminmax(prim, bdim, axis):
  rng = np.random.default_rng(2)
  x = batched(rng, (4, 5), np.float32, bdim)
  x[(slice(None),) * bdim + (1,)] = np.nan  # one example with NaNs: the first NaN wins
  expected = check_vmap(lambda v: prim(v, axis, np.int32), [x], [bdim])
  np_fn = np.nanargmax if prim is lax.argmax else np.nanargmin
  clean = np.moveaxis(x, bdim, 0)[[0, 2]]
  np.testing.assert_array_equal(expected[0][[0, 2]], np_fn(clean, axis=axis + 1))


def _argmax_computation(a, b):
  # (value, index) pairs: larger value wins, then smaller index.
  (av, ai), (bv, bi) = a, b
  pick_a = lax.bitwise_or(lax.gt(av, bv), lax.bitwise_and(lax.eq(av, bv), lax.lt(ai, bi)))
  return lax.select(pick_a, av, bv), lax.select(pick_a, ai, bi)


@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 2), (2, 1)])
def test_generic_reduce_variadic(in_axes):
  rng = np.random.default_rng(3)
  v = batched(rng, (3, 4), np.float32, in_axes[0])
  i = batched(rng, (3, 4), np.int32, in_axes[1], low=0, high=100)

  def f(v, i):
    return lax.reduce((v, i), (np.float32(-np.inf), np.int32(0)), _argmax_computation, (1,))
  expected = check_vmap(f, [v, i], in_axes)
  assert expected[0].shape == (3, 3)


def test_generic_reduce_batched_init():
  rng = np.random.default_rng(4)
  x = rand(rng, (3, 4, 5), np.float32)
  mul = lambda a, b: lax.mul(a, b)  # not lax.mul itself, so the generic primitive is used
  inits = np.ones((3,), np.float32)
  check_vmap(lambda v, i: lax.reduce(v, i, mul, (0, 1)), [x, inits], [0, 0], rtol=1e-5)
  check_vmap(lambda v, i: lax.reduce(v, i, mul, (1,)), [x, np.float32(1)], [2, None], rtol=1e-5)
  # Reducing nothing: each example gets its own initial value.
  empty = np.zeros((3, 0, 2), np.float32)
  inits = np.array([1., 2., 3.], np.float32)
  expected = check_vmap(lambda v, i: lax.reduce(v, i, mul, (0,)), [empty, inits], [0, 0])
  assert_close(expected[0], np.repeat(inits[:, None], 2, 1))


# --- windowed and cumulative reductions --------------------------------------------------

_cumulatives = [(lax.cumsum, np.cumsum), (lax.cumprod, np.cumprod),
                (lax.cummax, np.maximum.accumulate), (lax.cummin, np.minimum.accumulate),
                (lax.cumlogsumexp, np.logaddexp.accumulate)]


@pytest.mark.parametrize("prim,np_fn", _cumulatives, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("bdim,axis,reverse", [(0, 0, False), (0, 1, True), (1, 0, True),
                                               (2, 1, False)])
def test_cumulative(prim, np_fn, bdim, axis, reverse):
  x = batched(np.random.default_rng(5), (3, 4), np.float32, bdim, low=-1.5, high=1.5)
  expected = check_vmap(lambda v: prim(v, axis, reverse), [x], [bdim], rtol=1e-5, atol=1e-5)
  stacked = np.moveaxis(x, bdim, 0)
  if reverse:
    ref = np.flip(np_fn(np.flip(stacked, axis + 1), axis=axis + 1), axis + 1)
  else:
    ref = np_fn(stacked, axis=axis + 1)
  assert_close(expected[0], ref, np.float32, rtol=1e-5, atol=1e-5)


def test_cumulative_empty_batch():
  check_vmap(lambda v: lax.cumsum(v, 0), [np.zeros((4, 0), np.float32)], [1])


_window_cases = [
    dict(window_dimensions=(2, 2), window_strides=(1, 1), padding="VALID"),
    dict(window_dimensions=(2, 3), window_strides=(2, 1), padding="SAME"),
    dict(window_dimensions=(2, 2), window_strides=(1, 2), padding=((1, 0), (0, 1)),
         base_dilation=(2, 1), window_dilation=(1, 2)),
]


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("case", range(len(_window_cases)))
@pytest.mark.parametrize("bdim", [0, 2])
def test_reduce_window_monoids(kind, case, bdim):
  params = _window_cases[case]
  fn, init = {"sum": (lax.add, 0.), "max": (lax.max, -np.inf),
              "min": (lax.min, np.inf)}[kind]
  x = batched(np.random.default_rng(6), (4, 5), np.float32, bdim)
  f = lambda v: lax.reduce_window(v, np.float32(init), fn, **params)
  check_vmap(f, [x], [bdim])
  eqns = hlox.make_jaxpr(hlox.vmap(f, in_axes=bdim, out_axes=bdim))(x).jaxpr.eqns
  assert [e.primitive.name for e in eqns] == [f"reduce_window_{kind}"]


@pytest.mark.parametrize("in_axes", [(0, None), (None, 1), (2, 2)])
def test_reduce_window_generic(in_axes):
  rng = np.random.default_rng(7)
  a = batched(rng, (4, 5), np.float32, in_axes[0])
  b = batched(rng, (4, 5), np.float32, in_axes[1])

  def f(a, b):
    return lax.reduce_window((a, b), (np.float32(0), np.float32(-np.inf)),
                             lambda x, y: (lax.add(x[0], y[0]), lax.max(x[1], y[1])),
                             (2, 2), (1, 2), "SAME")
  check_vmap(f, [a, b], in_axes, rtol=1e-5)


def test_reduce_window_generic_batched_init():
  x = rand(np.random.default_rng(8), (3, 6), np.float32)
  add = lambda a, b: lax.add(a, b)
  check_vmap(lambda v, i: lax.reduce_window(v, i, add, (2,), (2,), ((1, 1),)),
             [x, np.zeros(3, np.float32)], [0, 0])


_select_params = dict(window_dimensions=(2, 2), window_strides=(2, 1),
                      padding=((0, 0), (1, 0)))


@pytest.mark.parametrize("select", ["ge", "le"])
@pytest.mark.parametrize("in_axes", [(0, 0), (None, 1), (2, None)])
def test_select_and_gather_add(select, in_axes):
  rng = np.random.default_rng(9)
  t = batched(rng, (4, 5), np.float32, in_axes[0])
  x = batched(rng, (4, 5), np.float32, in_axes[1])
  f = lambda t, x: windowed.select_and_gather_add_p.bind(
      t, x, select=select, base_dilation=(1, 1), window_dilation=(1, 1), **_select_params)
  check_vmap(f, [t, x], in_axes)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 2), (1, None)])
def test_select_and_scatter_add(in_axes):
  rng = np.random.default_rng(10)
  s = batched(rng, (2, 5), np.float32, in_axes[0])
  x = batched(rng, (4, 5), np.float32, in_axes[1])
  f = lambda s, x: windowed.select_and_scatter_add_p.bind(s, x, select="ge", **_select_params)
  check_vmap(f, [s, x], in_axes)


def test_vmap_grad_max_pool():
  x = rand(np.random.default_rng(11), (5, 4, 4), np.float32)
  pool = lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (2, 2), "VALID")
  g = lambda v: hlox.grad(lambda u: jnp.sum(pool(u) ** 2))(v)
  expected = check_vmap(g, [x], [0])
  assert np.count_nonzero(expected[0]) == 5 * 4  # one winner per window


# --- dot_general -------------------------------------------------------------------------

_dot_cases = [
    # (lhs shape, rhs shape, dimension numbers)
    ((3, 4), (4, 2), (((1,), (0,)), ((), ()))),           # matmul
    ((4,), (4, 2), (((0,), (0,)), ((), ()))),             # vecmat
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),  # batch matmul
    ((4, 2, 3), (3, 5, 2), (((2,), (0,)), ((1,), (2,)))),  # scattered dims
    ((3,), (2,), (((), ()), ((), ()))),                   # outer product
]


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("case", range(len(_dot_cases)))
@pytest.mark.parametrize("lbd,rbd", [(0, 0), (0, None), (None, 0), (1, None), (None, 1),
                                     (-1, 0), (-1, -1), (None, -1)])
def test_dot_general(case, lbd, rbd):
  lhs_shape, rhs_shape, dnums = _dot_cases[case]
  rng = np.random.default_rng(12)
  lbd = None if lbd is None else lbd % (len(lhs_shape) + 1)
  rbd = None if rbd is None else rbd % (len(rhs_shape) + 1)
  lhs = batched(rng, lhs_shape, np.float32, lbd)
  rhs = batched(rng, rhs_shape, np.float32, rbd)
  f = lambda a, b: lax.dot_general(a, b, dnums)
  check_vmap(f, [lhs, rhs], [lbd, rbd], rtol=1e-5, atol=1e-5)
  eqns = hlox.make_jaxpr(hlox.vmap(f, in_axes=(lbd, rbd)))(lhs, rhs).jaxpr.eqns
  assert [e.primitive.name for e in eqns].count("dot_general") == 1


def test_dot_general_keeps_params():
  lhs = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
  rhs = np.arange(8, dtype=np.int8).reshape(4, 2)
  f = lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                   preferred_element_type=np.int32, precision="highest")
  expected = check_vmap(f, [lhs, rhs], [1, None])
  assert expected[0].dtype == np.int32
  np.testing.assert_array_equal(expected[0],
                                np.einsum("ibk,kj->bij", lhs.astype(np.int32), rhs))


def test_dot_general_empty_batch():
  check_vmap(lambda a, b: lax.dot(a, b), [np.zeros((0, 3, 4), np.float32),
                                          np.ones((4, 2), np.float32)], [0, None])


def test_vmap_matvec_is_one_dot_general():
  rng = np.random.default_rng(13)
  m, xs = rand(rng, (3, 4), np.float32), rand(rng, (6, 4), np.float32)
  matvec = lambda m, v: lax.dot(m, v)
  vf = hlox.vmap(matvec, in_axes=(None, 0))
  jaxpr = hlox.make_jaxpr(vf)(m, xs)
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  assert names.count("dot_general") == 1, jaxpr
  assert "dot_general" in str(jaxpr)
  assert_close(vf(m, xs), xs @ m.T, np.float32)
  assert_close(hlox.jit(vf)(m, xs), xs @ m.T, np.float32)


# --- sort and top_k ----------------------------------------------------------------------

@pytest.mark.parametrize("bdim,dimension", [(0, 0), (0, 1), (1, 1), (2, 0), (1, 0)])
def test_sort_single(bdim, dimension):
  x = batched(np.random.default_rng(14), (3, 4), np.float32, bdim)
  expected = check_vmap(lambda v: lax.sort(v, dimension), [x], [bdim])
  assert_close(expected[0], np.sort(np.moveaxis(x, bdim, 0), axis=dimension + 1))


@pytest.mark.parametrize("in_axes,num_keys", [((0, None, 1), 1), ((None, 1, None), 2),
                                              ((2, 0, None), 2), ((None, None, 0), 1)])
def test_sort_multiple_operands(in_axes, num_keys):
  rng = np.random.default_rng(15)
  keys = batched(rng, (3, 5), np.int32, in_axes[0], low=0, high=3)  # ties
  keys2 = batched(rng, (3, 5), np.float32, in_axes[1])
  vals = batched(rng, (3, 5), np.int32, in_axes[2], low=0, high=100)
  f = lambda a, b, c: lax.sort((a, b, c), dimension=1, num_keys=num_keys)
  check_vmap(f, [keys, keys2, vals], in_axes)


def test_sort_empty_batch():
  check_vmap(lambda v: lax.sort(v), [np.zeros((0, 4), np.float32)], [0])


@pytest.mark.parametrize("bdim,axis", [(0, -1), (1, -1), (2, -1), (2, 0), (0, 0)])
def test_top_k(bdim, axis):
  x = batched(np.random.default_rng(16), (4, 5), np.float32, bdim)
  f = lambda v: lax.top_k(v, 3, axis=axis)
  expected = check_vmap(f, [x], [bdim])
  stacked = np.moveaxis(x, bdim, 0)
  np_axis = axis % 2 + 1
  order = np.flip(np.argsort(stacked, axis=np_axis, kind="stable"), np_axis)
  top = np.take(order, np.arange(3), axis=np_axis)
  np.testing.assert_array_equal(expected[1], top)
  assert_close(expected[0], np.take_along_axis(stacked, top, np_axis))


def test_vmap_grad_sort():
  x = rand(np.random.default_rng(17), (4, 5), np.float32)
  weights = np.arange(5, dtype=np.float32)
  g = lambda v: hlox.grad(lambda u: jnp.sum(lax.sort(u) * weights))(v)
  expected = check_vmap(g, [x], [0])
  ranks = np.argsort(np.argsort(x, axis=1), axis=1)
  assert_close(expected[0], weights[ranks])


# --- NumPy level -------------------------------------------------------------------------

@pytest.mark.parametrize("name,np_fn", [
    ("sum", lambda v: np.sum(v, axis=-1)),
    ("mean", lambda v: np.mean(v, axis=0)),
    ("max", lambda v: np.max(v, axis=-1)),
    ("argmax", lambda v: np.argmax(v, axis=0)),
    ("cumsum", lambda v: np.cumsum(v, axis=-1)),
    ("sort", lambda v: np.sort(v, axis=0)),
    ("argsort", lambda v: np.argsort(v, axis=-1, kind="stable")),
])
@pytest.mark.parametrize("in_axis", [0, 1])
def test_numpy_reductions_and_sorting(name, np_fn, in_axis):
  axis = 0 if name in ("mean", "argmax", "sort") else -1
  fn = getattr(jnp, name)
  x = rand(np.random.default_rng(18), (3, 4, 5), np.float32)
  f = lambda v: fn(v, axis=axis)
  expected = np.stack([np_fn(np.take(x, i, in_axis)) for i in range(x.shape[in_axis])])
  for got in (hlox.vmap(f, in_axes=in_axis)(x), hlox.jit(hlox.vmap(f, in_axes=in_axis))(x)):
    assert_close(got, expected, rtol=1e-5, atol=1e-5, check_dtype=False)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None), (1, 2)])
def test_numpy_dot_matmul_einsum(in_axes):
  rng = np.random.default_rng(19)
  a = batched(rng, (3, 4), np.float32, in_axes[0], size=2)
  b = batched(rng, (4, 5), np.float32, in_axes[1], size=2)
  fns = [(jnp.dot, np.dot), (jnp.matmul, np.matmul),
         (functools.partial(jnp.einsum, "ij,jk->ki"), functools.partial(np.einsum, "ij,jk->ki"))]
  for fn, np_fn in fns:
    expected = np.stack([np_fn(_take(a, in_axes[0], i), _take(b, in_axes[1], i))
                         for i in range(2)])
    vf = hlox.vmap(fn, in_axes=in_axes)
    assert_close(vf(a, b), expected, np.float32, rtol=1e-5, atol=1e-5)
    assert_close(hlox.jit(vf)(a, b), expected, np.float32, rtol=1e-5, atol=1e-5)


def test_per_example_gradients():
  rng = np.random.default_rng(20)
  params = (rand(rng, (3,), np.float32), np.float32(0.5))
  xs, ys = rand(rng, (6, 3), np.float32), rand(rng, (6,), np.float32)

  def loss(params, x, y):
    w, b = params
    return (jnp.dot(x, w) + b - y) ** 2

  per_example = hlox.vmap(hlox.grad(loss), in_axes=(None, 0, 0))
  loop = [hlox.grad(loss)(params, xs[i], ys[i]) for i in range(6)]
  residual = 2 * (xs @ params[0] + params[1] - ys)
  for gw, gb in (per_example(params, xs, ys), hlox.jit(per_example)(params, xs, ys)):
    assert gw.shape == (6, 3) and gb.shape == (6,)
    assert_close(gw, np.stack([g[0] for g in loop]), np.float32)
    assert_close(gb, np.stack([g[1] for g in loop]), np.float32)
    assert_close(gw, residual[:, None] * xs, np.float32, rtol=1e-5, atol=1e-5)
    assert_close(gb, residual, np.float32, rtol=1e-5, atol=1e-5)


# --- composition -------------------------------------------------------------------------

def test_nested_vmap_dot_and_sort():
  rng = np.random.default_rng(21)
  a, b = rand(rng, (2, 3, 4, 5), np.float32), rand(rng, (3, 5, 6), np.float32)
  vv = hlox.vmap(hlox.vmap(lambda x, y: lax.dot(x, y), (0, 0)), (0, None))
  assert_close(vv(a, b), np.einsum("abij,bjk->abik", a, b), np.float32, rtol=1e-5, atol=1e-5)
  names = [e.primitive.name for e in hlox.make_jaxpr(vv)(a, b).jaxpr.eqns]
  assert names.count("dot_general") == 1
  keys, vals = rand(rng, (3, 4), np.float32), rand(rng, (2, 4), np.float32)
  sort2 = hlox.vmap(hlox.vmap(lambda k, v: lax.sort_key_val(k, v)[1], (0, None)), (None, 0))
  expected = np.stack([np.stack([v[np.argsort(k)] for k in keys]) for v in vals])
  assert_close(hlox.jit(sort2)(keys, vals), expected, np.float32)


def test_vmap_of_jit():
  x = rand(np.random.default_rng(22), (3, 4, 5), np.float32)
  f = hlox.jit(lambda v: (jnp.cumsum(v, 0), lax.top_k(v, 2)[0], jnp.argmax(v, 0)))
  cs, top, am = hlox.vmap(f, in_axes=1)(x)
  assert_close(cs, np.moveaxis(np.cumsum(x, 0), 1, 0), np.float32)
  assert_close(top, np.moveaxis(-np.sort(-x, -1)[..., :2], 1, 0), np.float32)
  np.testing.assert_array_equal(am, np.argmax(x, 0))


def test_generic_reduce_only_init_batched():
  x = np.zeros((0, 2), np.float32)
  inits = np.array([5., 6., 7.], np.float32)
  add = lambda a, b: lax.add(a, b)
  f = lambda i: lax.reduce(x, i, add, (0,))
  got = hlox.vmap(f)(inits)
  assert_close(got, np.repeat(inits[:, None], 2, 1), np.float32)
  assert_close(hlox.jit(hlox.vmap(f))(inits), np.repeat(inits[:, None], 2, 1), np.float32)

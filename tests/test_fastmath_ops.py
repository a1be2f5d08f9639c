"""Every hlox.fastmath operation on the hlox and the NumPy backend, on the same inputs:
the results agree (tolerances by dtype), and match plain NumPy references."""
import collections

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st

import hlox
import hlox.fastmath as fastmath
from hlox.fastmath import numpy as np

_TOL = {onp.dtype(onp.float32): 2e-5, onp.dtype(onp.float64): 1e-12,
        onp.dtype(onp.float16): 2e-3}


def both(fn, *args, **kwargs):
  """``fn(*args)`` under each backend, results as NumPy pytrees: (hlox, numpy)."""
  outs = []
  for b in ("hlox", "numpy"):
    with fastmath.use_backend(b):
      out = fn(*args, **kwargs)
    outs.append(fastmath.nested_map(onp.asarray, out))
  return outs


def assert_agree(a, b, rtol=None, exact=False):
  la, lb = fastmath.tree_leaves(a), fastmath.tree_leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    x, y = onp.asarray(x), onp.asarray(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    assert x.dtype == y.dtype, (x.dtype, y.dtype)
    if exact or not onp.issubdtype(x.dtype, onp.inexact):
      onp.testing.assert_array_equal(x, y)
    else:
      tol = rtol if rtol is not None else _TOL.get(x.dtype, 1e-5)
      onp.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def check(fn, *args, reference=None, **kwargs):
  h, n = both(fn, *args)
  assert_agree(h, n, **kwargs)
  if reference is not None:
    assert_agree(n, fastmath.nested_map(onp.asarray, reference), **kwargs)
  return n


RNG = onp.random.default_rng(0)


def randn(*shape, dtype=onp.float32):
  return RNG.standard_normal(shape).astype(dtype)


# --- special functions -----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True},
                                    {"axis": -1, "b": onp.array([1., 2., 0.5, 3.], onp.float32)},
                                    {"axis": 0, "return_sign": True}])
def test_logsumexp(kwargs):
  x = randn(2, 3, 4) * 30
  out = check(lambda a: fastmath.logsumexp(a, **kwargs), x)
  b = kwargs.get("b", 1.)
  axis = kwargs.get("axis")
  ref = onp.log(onp.sum(b * onp.exp(x.astype(onp.float64)), axis=axis,
                        keepdims=kwargs.get("keepdims", False)))
  got = out[0] if kwargs.get("return_sign") else out
  onp.testing.assert_allclose(got, ref, rtol=1e-5)


def test_logsumexp_handles_infinities():
  x = onp.array([[-onp.inf, -onp.inf], [0., onp.inf], [1000., 1000.]], onp.float32)
  out = check(lambda a: fastmath.logsumexp(a, axis=1), x)
  onp.testing.assert_allclose(out, [-onp.inf, onp.inf, 1000 + onp.log(2)], rtol=1e-6)


def test_expit_sigmoid_erf():
  x = onp.concatenate([randn(50) * 4, onp.array([-100., 100., 0.], onp.float32)])
  import math
  ref = onp.array([math.erf(v) for v in x.astype(float)], onp.float32)
  check(fastmath.erf, x, reference=ref, rtol=1e-6)
  ref = 1 / (1 + onp.exp(-x.astype(onp.float64)))
  check(fastmath.expit, x, reference=ref.astype(onp.float32), rtol=1e-6)
  check(fastmath.sigmoid, x, reference=ref.astype(onp.float32), rtol=1e-6)


# --- convolution and pooling -----------------------------------------------------------------

def _conv_ref(x, w, strides, pads, dilation):
  """Direct NCHW/OIHW cross-correlation, loops over output positions (2-D only)."""
  n, c, hh, ww = x.shape
  o, _, kh, kw = w.shape
  xp = onp.pad(x, [(0, 0), (0, 0), pads[0], pads[1]])
  dh, dw = dilation
  eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
  oh = (xp.shape[2] - eh) // strides[0] + 1
  ow = (xp.shape[3] - ew) // strides[1] + 1
  out = onp.zeros((n, o, oh, ow), onp.float64)
  for i in range(oh):
    for j in range(ow):
      patch = xp[:, :, i * strides[0]:i * strides[0] + eh:dh, j * strides[1]:j * strides[1] + ew:dw]
      out[:, :, i, j] = onp.einsum("nchw,ochw->no", patch, w)
  return out


@pytest.mark.parametrize("padding,pads,strides,dilation", [
    ("VALID", [(0, 0), (0, 0)], (1, 1), None),
    ("SAME", None, (2, 1), None),
    ("SAME", None, (1, 2), (2, 1)),
    ([(1, 2), (0, 1)], [(1, 2), (0, 1)], (2, 1), (2, 1)),
])
def test_conv_nhwc(padding, pads, strides, dilation):
  x = randn(2, 7, 6, 3)
  w = randn(3, 2, 3, 4)
  out = check(lambda a, b: fastmath.conv(a, b, strides, padding, ("NHWC", "HWIO", "NHWC"),
                                         filter_dilation=dilation), x, w, rtol=1e-4)
  d = dilation or (1, 1)
  if pads is None:  # SAME: output size ceil(n / stride)
    pads = []
    for n, k, s, dd in zip((7, 6), (3, 2), strides, d):
      total = max((-(-n // s) - 1) * s + (k - 1) * dd + 1 - n, 0)
      pads.append((total // 2, total - total // 2))
  ref = _conv_ref(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), strides, pads, d)
  onp.testing.assert_allclose(out, ref.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_conv_other_layouts_and_ranks():
  x = randn(2, 3, 8, 5)
  w = randn(4, 3, 3, 2)
  out = check(lambda a, b: fastmath.conv(a, b, (1, 1), "SAME", ("NCHW", "OIHW", "NCHW")), x, w,
              rtol=1e-4)
  assert out.shape == (2, 4, 8, 5)
  # Output in another layout than the input: the same numbers, transposed.
  out2 = check(lambda a, b: fastmath.conv(a, b, (1, 1), "SAME", ("NCHW", "OIHW", "NHWC")), x, w,
               rtol=1e-4)
  onp.testing.assert_allclose(out2, out.transpose(0, 2, 3, 1), rtol=1e-5)
  check(lambda a, b: fastmath.conv(a, b, (2,), "VALID", ("NWC", "WIO", "NWC")),
        randn(3, 9, 2), randn(3, 2, 5), rtol=1e-4)


POOL_CASES = [((2, 2), None, "VALID"), ((2, 2), (2, 2), "VALID"), ((3, 3), (1, 1), "SAME"),
              ((3, 2), (2, 3), "SAME"), ((2, 3), (1, 2), [(1, 0), (2, 1)])]


@pytest.mark.parametrize("pool_size,strides,padding", POOL_CASES)
def test_pools(pool_size, strides, padding):
  x = randn(2, 7, 6, 3)
  for op in (fastmath.max_pool, fastmath.sum_pool, fastmath.avg_pool):
    check(lambda a: op(a, pool_size, strides, padding), x)
  xi = RNG.integers(-50, 50, (1, 5, 5, 2)).astype(onp.int32)
  out = check(lambda a: fastmath.max_pool(a, pool_size, strides, padding), xi)
  assert out.dtype == onp.int32
  check(lambda a: fastmath.sum_pool(a, pool_size, strides, padding), xi)


def test_avg_pool_same_padding_divides_by_real_elements():
  x = onp.arange(16, dtype=onp.float32).reshape(1, 4, 4, 1)
  out = check(lambda a: fastmath.avg_pool(a, (3, 3), (1, 1), "SAME"), x)
  img = x[0, :, :, 0]
  ref = onp.array([[img[max(i - 1, 0):i + 2, max(j - 1, 0):j + 2].mean() for j in range(4)]
                   for i in range(4)], onp.float32)
  onp.testing.assert_allclose(out[0, :, :, 0], ref, rtol=1e-6)
  assert out[0, 0, 0, 0] == pytest.approx((0 + 1 + 4 + 5) / 4)  # a corner sees 4 elements


@settings(max_examples=8)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 3), st.sampled_from(["VALID", "SAME"]))
def test_pools_agree_on_random_geometry(h, w, ph, pw, s, padding):
  if padding == "VALID" and (ph > h or pw > w):
    return
  x = randn(1, h, w, 2)
  for op in (fastmath.max_pool, fastmath.sum_pool, fastmath.avg_pool):
    check(lambda a: op(a, (ph, pw), (s, s), padding), x)


# --- sorting ---------------------------------------------------------------------------------

def test_top_k_and_sort_key_val():
  x = onp.array([[3., 1., 3., 2., 5., 1.], [0., -1., 7., 7., 2., 2.]], onp.float32)
  vals, idx = check(lambda a: fastmath.top_k(a, 3), x)
  onp.testing.assert_array_equal(vals, [[5, 3, 3], [7, 7, 2]])
  onp.testing.assert_array_equal(idx, [[4, 0, 2], [2, 3, 4]])  # ties: lower index first
  xi = RNG.integers(-5, 5, (4, 9)).astype(onp.int32)
  check(lambda a: fastmath.top_k(a, 4), xi)
  check(lambda a: fastmath.top_k(a, 2), RNG.integers(0, 5, (7,)).astype(onp.uint8))
  keys = onp.array([3, 1, 2, 1, 3], onp.int32)
  vals = onp.arange(5, dtype=onp.float32)
  k, v = check(lambda a, b: fastmath.sort_key_val(a, b), keys, vals)
  onp.testing.assert_array_equal(k, [1, 1, 2, 3, 3])
  onp.testing.assert_array_equal(v, [1, 3, 2, 0, 4])  # stable
  check(lambda a, b: fastmath.sort_key_val(a, b, dimension=0), randn(5, 3), randn(5, 3))


# --- control flow ----------------------------------------------------------------------------

Carry = collections.namedtuple("Carry", ["total", "count"])


def test_scan_map_fori_cond():
  xs = {"a": randn(5, 3), "b": onp.arange(5, dtype=onp.float32)}

  def step(carry, x):
    new = Carry(carry.total + x["a"].sum() * x["b"], carry.count + 1)
    return new, (x["a"] * 2, None)

  init = Carry(onp.float32(0), onp.int32(0))
  (carry, (ys, none)) = check(lambda: fastmath.scan(step, init, xs))
  assert none is None and int(carry[1]) == 5
  onp.testing.assert_allclose(ys, xs["a"] * 2)
  check(lambda: fastmath.scan(step, init, xs, reverse=True))
  # No xs: length decides; ys of scalars.
  carry, ys = check(lambda: fastmath.scan(lambda c, _: (c * 2, c), onp.float32(1), None, length=4))
  onp.testing.assert_array_equal(ys, [1, 2, 4, 8])
  assert carry == 16
  out = check(lambda: fastmath.map(lambda x: x["a"].sum() + x["b"], xs))
  onp.testing.assert_allclose(out, xs["a"].sum(1) + xs["b"], rtol=1e-5)
  h, n = both(lambda: fastmath.fori_loop(2, 5, lambda i, x: x + i, 1))
  assert h == n == 10  # an int32 array on hlox, a Python int on NumPy
  check(lambda: fastmath.fori_loop(0, 4, lambda i, x: x * 1.5 + i, onp.ones(3, onp.float32)))
  for pred in (True, False):
    check(lambda: fastmath.cond(pred, lambda a, b: a + b, lambda a, b: a - b,
                                onp.float32(3), onp.float32(1)))
  assert check(lambda: fastmath.cond(onp.bool_(False), lambda a: a * 2, lambda a: a * 3,
                                     onp.float32(2))) == 6


def test_zero_length_scan_keeps_the_output_structure():
  xs = onp.zeros((0, 3), onp.float32)
  carry, ys = check(lambda: fastmath.scan(lambda c, x: (c + x.sum(), x * 2), onp.float32(0), xs))
  assert ys.shape == (0, 3) and carry == 0


def test_remat_stop_gradient_lt_jit():
  f = lambda x: np.sin(x) * 2
  x = randn(4)
  check(lambda a: fastmath.remat(f)(a), x)
  check(lambda a: fastmath.jit(f)(a), x)
  check(lambda a: fastmath.stop_gradient(a) + 1, x)
  check(lambda a: fastmath.lt(a, 0.), x)


# --- indexed updates and dynamic slices ------------------------------------------------------

INDEX_CASES = [
    (2, 5.),
    (-1, 5.),
    (7, 5.),  # out of bounds: dropped
    (-9, 5.),
    (slice(1, 3), onp.array([[1.], [2.]], onp.float32)),
    (onp.array([0, 2, 0]), 1.),  # repeated index: add accumulates
    (onp.array([1, 9, -1]), onp.array([[1.], [2.], [3.]], onp.float32)),
    ((1, 0), 9.),
    ((slice(None), 0), 4.),
    ((onp.array([0, 3]), onp.array([0, 0])), onp.array([7., 8.], onp.float32)),
    ((Ellipsis, 0), 2.),
    ((onp.array([True, False, True, False]),), 3.),
]


@pytest.mark.parametrize("idx,y", INDEX_CASES)
def test_index_updates(idx, y):
  x = onp.arange(4, dtype=onp.float32).reshape(4, 1) * onp.ones((1, 2), onp.float32)
  for op in (fastmath.index_update, fastmath.index_add, fastmath.index_min,
             fastmath.index_max):
    out = check(lambda a: op(a, idx, y), x, exact=op is not fastmath.index_add)
    assert out is not x
  onp.testing.assert_array_equal(x[:, 0], [0, 1, 2, 3])  # the input is not modified


def test_index_add_accumulates_and_drops_out_of_bounds():
  x = onp.zeros(4, onp.int32)
  out = check(lambda a: fastmath.index_add(a, onp.array([0, 0, 3, 4, -1, -5]), 1), x)
  onp.testing.assert_array_equal(out, [2, 0, 0, 2])


@pytest.mark.parametrize("start", [0, 2, 5, 9, -1, -3, -20])
def test_dynamic_slices_clamp(start):
  x = onp.arange(24, dtype=onp.int32).reshape(6, 4)
  check(lambda a: fastmath.dynamic_slice(a, (start, 1), (3, 2)), x)
  check(lambda a: fastmath.dynamic_slice_in_dim(a, start, 2, axis=0), x)
  check(lambda a: fastmath.dynamic_slice_in_dim(a, start, 3, axis=1), x)
  u = -onp.ones((2, 3), onp.int32)
  check(lambda a: fastmath.dynamic_update_slice(a, u, (start, start)), x)
  check(lambda a: fastmath.dynamic_update_slice_in_dim(a, u[:1], start, axis=0), x)
  out = check(lambda a: fastmath.dynamic_slice(a, (start, 0), (3, 4)), x)
  s = min(max(start + 6 if start < 0 else start, 0), 3)
  onp.testing.assert_array_equal(out, x[s:s + 3])


# --- signatures, datasets, devices -----------------------------------------------------------

def test_abstract_eval_and_signature():
  def f(x, y):
    return {"s": np.sum(x, axis=0), "p": (x @ y).astype(np.int32)}
  sig_in = (fastmath.ShapeDtype((3, 4)), fastmath.ShapeDtype((4, 2)))
  h, n = [None, None]
  for i, b in enumerate(("hlox", "numpy")):
    with fastmath.use_backend(b):
      out = fastmath.abstract_eval(f)(*sig_in)
      assert out == {"s": fastmath.ShapeDtype((4,), onp.float32),
                     "p": fastmath.ShapeDtype((3, 2), onp.int32)}
      assert fastmath.abstract_eval(f)(onp.ones((3, 4), onp.float32),
                                       onp.ones((4, 2), onp.float32)) == out
  assert fastmath.signature([onp.ones((2,), onp.int8), {"a": onp.ones(())}]) == [
      fastmath.ShapeDtype((2,), onp.int8), {"a": fastmath.ShapeDtype((), onp.float64)}]
  sd = fastmath.ShapeDtype([2, 3])
  assert sd.shape == (2, 3) and sd.dtype == onp.float32 and len(sd) == 1
  assert sd.replace(dtype=onp.int32) == fastmath.ShapeDtype((2, 3), onp.int32)
  with pytest.raises(TypeError, match="ShapeDtype: shape must be a tuple or list"):
    fastmath.ShapeDtype(3)


def test_dataset_as_numpy_and_device_counts():
  data = [{"x": [1, 2], "y": (onp.float32(3),)}, {"x": [4, 5], "y": (onp.float32(6),)}]
  for b in ("hlox", "numpy"):
    with fastmath.use_backend(b):
      out = list(fastmath.dataset_as_numpy(iter(data)))
      # Lists are containers (Trax's trees): their items become arrays.
      assert len(out) == 2 and all(isinstance(v, onp.ndarray) for v in out[1]["x"])
      onp.testing.assert_array_equal(out[1]["x"], [4, 5])
      assert isinstance(out[0]["y"][0], onp.ndarray)
      assert fastmath.local_device_count() >= 1
      assert fastmath.global_device_count() >= fastmath.local_device_count()
  with fastmath.use_backend("numpy"):
    assert fastmath.local_device_count() == fastmath.global_device_count() == 1
  with fastmath.use_backend("hlox"):
    assert fastmath.local_device_count() == hlox.local_device_count()
  # hlox Arrays as dataset elements come out as NumPy arrays too.
  out = list(fastmath.dataset_as_numpy([hlox.numpy.ones(2)]))
  assert isinstance(out[0], onp.ndarray)


def test_tree_utilities_follow_trax():
  tree = {"a": [1, None, (2, 3)], "b": ()}
  assert fastmath.tree_flatten(tree) == [1, None, 2, 3]
  assert fastmath.tree_leaves(tree) == [1, 2, 3]
  assert fastmath.tree_leaves(tree, ignore_nones=False) == [1, None, 2, 3]
  new, rest = fastmath.tree_unflatten([10, 20, 30, 40, 50], tree)
  assert new == {"a": [10, 20, (30, 40)], "b": ()} and rest == [50]
  new, rest = fastmath.tree_unflatten([7, 8], (1, (), (2, ())), copy_from_tree=[()])
  assert new == (7, (), (8, ())) and rest == []
  assert fastmath.nested_map(lambda x: x * 2, {"a": None, "b": [1]}) == {"a": None, "b": [2]}
  assert fastmath.nested_map(lambda x: 0 if x is None else x, [None], ignore_nones=False) == [0]
  assert fastmath.nested_map(lambda t: sum(t), [(1, 2), (3, 4)], level=1) == [3, 7]
  assert fastmath.nested_map_multiarg(lambda a, b: a + b, {"x": (1, 2)}, {"x": (10, 20)}) == \
      {"x": (11, 22)}
  # As in Trax, zipped tuples come back as lists.
  assert fastmath.nested_zip([(1, [2]), (3, [4])]) == [(1, 3), [(2, 4)]]
  out = fastmath.nested_stack([{"a": onp.ones(2)}, {"a": onp.zeros(2)}], axis=1,
                              np_module=hlox.numpy)
  assert out["a"].shape == (2, 2) and isinstance(out["a"], hlox.Array)
  with pytest.raises(ValueError, match="nested_zip: cannot zip an empty sequence"):
    fastmath.nested_zip([])


def test_dataset_as_numpy_uses_a_tf_dataset_numpy_iterator():
  class FakeTFDataset:  # the part of tf.data.Dataset that dataset_as_numpy relies on
    def as_numpy_iterator(self):
      return iter([{"x": onp.arange(3)}, {"x": onp.arange(3) + 1}])

    def __iter__(self):
      raise AssertionError("a tf.data.Dataset is read through as_numpy_iterator")
  for b in ("hlox", "numpy"):
    with fastmath.use_backend(b):
      out = list(fastmath.dataset_as_numpy(FakeTFDataset()))
      onp.testing.assert_array_equal(out[1]["x"], [1, 2, 3])


def test_fori_loop_with_traced_bounds_on_hlox():
  with fastmath.use_backend("hlox"):
    f = fastmath.jit(lambda n: fastmath.fori_loop(0, n, lambda i, x: x + i, 0))
    assert int(f(onp.int32(5))) == 10

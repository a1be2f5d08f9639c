"""fastmath.random: the NumPy backend's threefry gives the hlox backend's keys and bits."""
import time

import ml_dtypes
import numpy as onp
import pytest

import hlox.fastmath as fastmath
from hlox.config import enable_x64
from hlox.fastmath import prng_numpy

R = fastmath.random


def both(fn):
  outs = []
  for b in ("hlox", "numpy"):
    with fastmath.use_backend(b):
      outs.append(onp.asarray(fn()))
  return outs


def assert_bits_equal(a, b):
  assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
  onp.testing.assert_array_equal(a.view(f"uint{a.dtype.itemsize * 8}") if a.dtype.kind == "f"
                                 or a.dtype == ml_dtypes.bfloat16 else a,
                                 b.view(f"uint{b.dtype.itemsize * 8}") if b.dtype.kind == "f"
                                 or b.dtype == ml_dtypes.bfloat16 else b)


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 - 1, 2**32 + 7, -3, onp.int32(5),
                                  onp.uint32(4000000000)])
def test_keys_split_fold_in(seed):
  h, n = both(lambda: R.get_prng(seed))
  assert_bits_equal(h, n)
  assert n.dtype == onp.uint32 and n.shape == (2,)
  for num in (2, 3, (2, 3)):
    assert_bits_equal(*both(lambda: R.split(R.get_prng(seed), num)))
  for data in (0, 1, 12345, 2**32 - 1):
    assert_bits_equal(*both(lambda: R.fold_in(R.get_prng(seed), data)))
  # split returns independent keys: two splits of one key differ from each other.
  a, b = R.split(R.get_prng(seed))
  assert not onp.array_equal(onp.asarray(a), onp.asarray(b))


def test_keys_with_x64_use_the_high_word():
  with enable_x64():
    h, n = both(lambda: R.get_prng(2**40 + 3))
    assert_bits_equal(h, n)
    assert n.tolist() == [256, 3]


@pytest.mark.parametrize("dtype,minval,maxval", [
    (None, 0., 1.), (onp.float32, -3.3, 7.1), (onp.float32, 0., 1e-3),
    (onp.float16, -2., 5.), (ml_dtypes.bfloat16, -2., 5.), (onp.float32, -1., 1.)])
def test_uniform_bit_exact(dtype, minval, maxval):
  key = R.get_prng(7)
  h, n = both(lambda: R.uniform(key, (2000, 7), dtype=dtype, minval=minval, maxval=maxval))
  assert_bits_equal(h, n)
  assert n.min() >= minval and n.max() < maxval


@pytest.mark.parametrize("dtype", [onp.float16, ml_dtypes.bfloat16])
def test_half_width_fusion_detection_agrees_with_xla(dtype):
  # The NumPy backend decides from the CPU's flags whether XLA fuses a half-width a * b + c;
  # XLA itself is the judge, on inputs where one rounding and two give different bits (a
  # carries enough significant bits that 7 * a must round, in float16 as in bfloat16).
  import hlox
  from hlox.fastmath import xla_cpu_math
  dtype = onp.dtype(dtype)
  one = onp.array(1.0, dtype)
  patterns = one.view(f"uint{dtype.itemsize * 8}") + onp.arange(1, 1024, dtype=onp.uint16)
  a = patterns.view(dtype) - one
  b, c = onp.array(7.0, dtype), onp.array(-2.0, dtype)
  xla = onp.asarray(hlox.jit(lambda a, b, c: a * b + c)(a, b, c))
  fused = xla_cpu_math.fma_half(a, b, c)
  unfused = (a * b).astype(dtype) + c
  assert not onp.array_equal(fused.view(patterns.dtype), unfused.view(patterns.dtype))
  assert_bits_equal(xla, fused if xla_cpu_math.xla_fuses_half(dtype) else unfused)


def test_uniform_with_array_bounds_and_x64():
  key = R.get_prng(3)
  lo = onp.linspace(-5, 0, 7).astype(onp.float32)
  assert_bits_equal(*both(lambda: R.uniform(key, (100, 7), minval=lo, maxval=lo + 2.5)))
  with enable_x64():
    h, n = both(lambda: R.uniform(key, (1000,)))
    assert n.dtype == onp.float64
    assert_bits_equal(h, n)


@pytest.mark.parametrize("minval,maxval,dtype", [
    (0, 10, None), (-2**31, 2**31 - 1, None), (5, 5, None), (-7, 300, onp.int8),
    (0, 256, onp.uint8), (0, 1000, onp.int16), (3, 2**31 - 1, onp.int32)])
def test_randint_bit_exact(minval, maxval, dtype):
  key = R.get_prng(11)
  kwargs = {} if dtype is None else {"dtype": dtype}
  h, n = both(lambda: R.randint(key, (3000,), minval, maxval, **kwargs))
  assert_bits_equal(h, n)
  assert n.dtype == (onp.int32 if dtype is None else dtype)


def test_randint_defaults_to_int32_on_every_backend_even_with_x64():
  with enable_x64():
    for b in ("hlox", "numpy"):
      with fastmath.use_backend(b):
        assert onp.asarray(R.randint(R.get_prng(0), (3,), 0, 5)).dtype == onp.int32
    assert_bits_equal(*both(lambda: R.randint(R.get_prng(0), (500,), 0, 10**6)))


def test_randint_with_array_bounds():
  key = R.get_prng(2)
  lo = onp.arange(5, dtype=onp.int32)
  assert_bits_equal(*both(lambda: R.randint(key, (40, 5), lo, lo * 3 + 1)))


@pytest.mark.parametrize("p", [0.5, 0.1, onp.float32(0.9),
                               onp.linspace(0, 1, 11).astype(onp.float32)])
def test_bernoulli_bit_exact(p):
  key = R.get_prng(5)
  shape = None if onp.ndim(p) else (4000,)
  h, n = both(lambda: R.bernoulli(key, p, shape))
  assert_bits_equal(h, n)
  assert n.dtype == onp.bool_
  if shape:
    assert abs(n.mean() - float(p)) < 0.03


@pytest.mark.parametrize("seed,shape", [(0, (200001,)), (1, (7, 333)), (42, (5,)), (3, ()),
                                        (2**31 - 1, (2, 3, 101))])
def test_normal_bit_exact(seed, shape):
  key = R.get_prng(seed)
  h, n = both(lambda: R.normal(key, shape))
  assert n.dtype == onp.float32 and n.shape == shape
  assert_bits_equal(h, n)
  if n.size > 10**5:
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.01


@pytest.mark.parametrize("dtype", [onp.float16, ml_dtypes.bfloat16])
def test_normal_bit_exact_in_half_precision(dtype):
  h, n = both(lambda: R.normal(R.get_prng(9), (20001,), dtype=dtype))
  assert n.dtype == dtype
  assert_bits_equal(h, n)


def test_normal_and_uniform_bit_exact_in_float64():
  with enable_x64():
    for seed, shape in ((0, (30001,)), (5, (3, 77))):
      key = R.get_prng(seed)
      h, n = both(lambda: R.normal(key, shape))
      assert n.dtype == onp.float64
      assert_bits_equal(h, n)
      # a span that is no power of two: the fused multiply-add rounds differently
      for lo, hi in ((-0.3, 1.7), (-3.3, 7.1), (1e-3, 1e-3 + 1e-9)):
        assert_bits_equal(*both(lambda: R.uniform(key, shape, minval=lo, maxval=hi)))


def test_model_weights_are_identical_across_backends():
  def init(seed):
    k1, k2, k3 = R.split(R.get_prng(seed), 3)
    return {"w": R.uniform(k1, (16, 8), minval=-0.25, maxval=0.25),
            "b": R.uniform(k2, (8,), minval=-0.1, maxval=0.1),
            "mask": R.bernoulli(k3, 0.8, (8,)),
            "idx": R.randint(R.fold_in(k3, 1), (4,), 0, 16)}
  for seed in (0, 1):
    weights = []
    for b in ("hlox", "numpy"):
      with fastmath.use_backend(b):
        weights.append(fastmath.nested_map(onp.asarray, init(seed)))
    for name in weights[0]:
      assert_bits_equal(weights[0][name], weights[1][name])


def test_bad_keys_and_dtypes():
  with fastmath.use_backend("numpy"):
    with pytest.raises(TypeError, match="uniform: expected a PRNG key"):
      R.uniform(onp.zeros(3, onp.uint32), (2,))
    with pytest.raises(ValueError, match="dtype argument to `normal` must be a float dtype"):
      R.normal(R.get_prng(0), (2,), dtype=onp.int32)
    with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
      R.randint(R.get_prng(0), (2,), 0, 3, dtype=onp.float32)
    with pytest.raises(TypeError, match="fold_in accepts a scalar"):
      R.fold_in(R.get_prng(0), onp.arange(2))


def test_threefry_known_answer():
  # The Threefry-2x32 (20 rounds) test vector of the Random123 suite.
  x = prng_numpy.threefry2x32(onp.uint32(0x13198a2e), onp.uint32(0x03707344),
                              onp.array([0x243f6a88], onp.uint32),
                              onp.array([0x85a308d3], onp.uint32))
  assert [int(x[0][0]), int(x[1][0])] == [0xc4923a9c, 0x483df7a0]


@pytest.mark.slow
def test_a_million_normals_in_half_a_second():
  key = prng_numpy.PRNGKey(0)
  best = min(_timed(lambda: prng_numpy.normal(key, (10**6,))) for _ in range(3))
  assert best < 0.5, best


def _timed(fn):
  t = time.perf_counter()
  fn()
  return time.perf_counter() - t

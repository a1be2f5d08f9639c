"""hlox.ops segment reductions and the static-index bounds check."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import ops


def _np_segment(op, data, ids, n):
  fill = {"sum": 0, "prod": 1, "min": np.inf, "max": -np.inf}[op]
  out = np.full((n,) + data.shape[1:], fill, data.dtype)
  reduce = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}[op]
  for row, s in zip(data, ids):
    if 0 <= s < n:  # out-of-range ids (negative ones too) are dropped
      out[s] = reduce(out[s], row)
  return out


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
@pytest.mark.parametrize("bucket_size", [None, 2])
def test_segment_reductions_match_numpy(op, bucket_size):
  rng = np.random.RandomState(0)
  data = rng.randn(9, 3).astype(np.float32)
  ids = np.array([0, 2, 2, -1, 4, 1, 0, 7, 2])
  fun = getattr(ops, f"segment_{op}")
  got = fun(data, ids, num_segments=5, bucket_size=bucket_size)
  np.testing.assert_allclose(np.asarray(got), _np_segment(op, data, ids, 5), rtol=1e-5)
  jitted = hlox.jit(lambda d, i: fun(d, i, num_segments=5, bucket_size=bucket_size))(data, ids)
  np.testing.assert_allclose(np.asarray(jitted), np.asarray(got), rtol=1e-6)


def test_segment_defaults_and_identities():
  # num_segments defaults to max id + 1; empty segments hold the identity of the dtype
  out = ops.segment_max(np.array([3, 1], np.int32), np.array([0, 2]))
  assert out.shape == (3,)
  assert np.asarray(out).tolist() == [3, np.iinfo(np.int32).min, 1]
  assert np.asarray(ops.segment_min(np.array([True, False]), np.array([0, 0]), 2)).tolist() \
      == [False, True]
  with pytest.raises(ValueError, match="num_segments must be non-negative"):
    ops.segment_sum(np.ones(2), np.array([0, 1]), num_segments=-1)
  with pytest.raises(TypeError, match="segment_ids must be integers"):
    ops.segment_sum(np.ones(2), np.array([0.0, 1.0]), num_segments=2)


def test_segment_sum_gradient():
  data = np.arange(6.0, dtype=np.float32)
  ids = np.array([0, 1, 1, 2, 2, 2])
  g = hlox.grad(lambda d: jnp.sum(ops.segment_sum(d, ids, 3) ** 2))(data)
  sums = _np_segment("sum", data, ids, 3)
  np.testing.assert_allclose(np.asarray(g), 2 * sums[ids])


@pytest.mark.parametrize("shape,idx,msg", [
    ((2,), -4, "index -4 out of bounds for axis 0 with size 2"),
    ((2, 3), np.index_exp[:, 4], "index 4 out of bounds for axis 1 with size 3"),
    ((2, 3, 5), np.index_exp[:, [1, 2], 6], "index 6 out of bounds for axis 2 with size 5"),
])
def test_check_static_indices(shape, idx, msg):
  x = jnp.zeros(shape)
  clamped = np.asarray(x[idx])  # off by default: clamped as traced indices are, as JAX
  hlox.config.update("check_static_indices", True)
  try:
    for fun in (lambda: x[idx], lambda: hlox.jit(lambda v: v[idx])(x),
                lambda: x.at[idx].get()):
      with pytest.raises(IndexError, match=msg):
        fun()
    # explicit modes are not checked
    np.testing.assert_array_equal(np.asarray(x.at[idx].get(mode="clip")), clamped)
  finally:
    hlox.config.update("check_static_indices", False)
  np.testing.assert_array_equal(np.asarray(x[idx]), clamped)  # the checked traces are gone

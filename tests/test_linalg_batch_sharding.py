"""Linear algebra on a batch split over devices runs shard by shard: LAPACK calls are
batch partitionable (no all-gather or all-to-all in the compiled program), with the same
values as on one device; a float0 tangent of a sharded jvp comes back as such."""
import numpy as np

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.sharding import NamedSharding, PartitionSpec as P


def _batch_split(x):
  mesh = hlox.make_mesh((2,), ("i",), axis_types=(hlox.sharding.AxisType.Auto,))
  return hlox.device_put(x, NamedSharding(mesh, P("i")))


def _spd(rng, n=8, m=6):
  x = rng.standard_normal((n, m, m)).astype(np.float32)
  return x @ np.swapaxes(x, -1, -2) + m * np.eye(m, dtype=np.float32)


def test_factorizations_stay_split():
  rng = np.random.default_rng(0)
  x = _spd(rng)
  xs = _batch_split(x)
  for f in (jnp.linalg.cholesky, jnp.linalg.eigh, jnp.linalg.qr, lax.linalg.lu,
            lambda a: jnp.linalg.svd(a, compute_uv=False)):
    fj = hlox.jit(f)
    np.testing.assert_allclose(np.asarray(hlox.tree.leaves(fj(xs))[0]),
                               np.asarray(hlox.tree.leaves(f(x))[0]), rtol=1e-4, atol=1e-4)
    text = fj.lower(xs).compile().as_text()
    assert "all-" not in text, f
  lower = hlox.jit(jnp.linalg.cholesky).lower(xs).as_text()
  assert 'num_batch_dims = "1"' in lower and "sdy.sharding_rule" in lower


def test_lu_permutation_matches_the_swaps():
  swaps = np.array([[2, 2, 3], [0, 1, 2], [3, 3, 3]], np.int32)
  perm = np.asarray(lax.linalg.lu_pivots_to_permutation(swaps, 4))
  for row, p in zip(swaps, perm):
    expected = list(range(4))
    for i, j in enumerate(row):
      expected[i], expected[j] = expected[j], expected[i]
    assert list(p) == expected
  rng = np.random.default_rng(1)
  x = rng.standard_normal((8, 10, 6)).astype(np.float32)
  lu, pivots, permutation = hlox.jit(lax.linalg.lu)(_batch_split(x))
  for k in range(8):
    l = np.tril(np.asarray(lu[k]), -1) + np.eye(10, 6, dtype=np.float32)
    u = np.triu(np.asarray(lu[k])[:6])
    np.testing.assert_allclose(x[k][np.asarray(permutation[k])], l @ u, atol=1e-4)


def test_sharded_jvp_with_float0_tangents():
  x = np.random.default_rng(2).standard_normal((8, 6, 6)).astype(np.float32)
  f = hlox.jit(lambda p, t: hlox.jvp(lax.linalg.lu, p, t))
  xs = _batch_split(x)
  (_, _, perm), (_, dpiv, dperm) = f((xs,), (xs,))
  assert dpiv.dtype == hlox.dtypes.float0 and dperm.shape == (8, 6)
  assert sorted(np.asarray(perm[0]).tolist()) == list(range(6))

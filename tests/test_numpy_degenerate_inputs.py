"""NumPy's answers on degenerate inputs (no step, no axis) and on builtin collections as
operands, which JAX's test files sample."""
import operator
import re

import numpy as np
import pytest

import hlox.numpy as jnp


@pytest.mark.parametrize("num", [0, 1, 2])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("shapes", [((), (2,)), ((2, 2), (2,)), ((), ())])
def test_linspace_step_shape_matches_numpy(num, endpoint, shapes):
  start = np.linspace(1., 2., int(np.prod(shapes[0]))).reshape(shapes[0]).astype(np.float32)
  stop = np.full(shapes[1], 5., np.float32)
  want, want_step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True)
  got, got_step = jnp.linspace(start, stop, num, endpoint=endpoint, retstep=True)
  assert got.shape == want.shape
  assert np.shape(got_step) == np.shape(want_step)
  np.testing.assert_allclose(np.asarray(got_step), want_step, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_trim_zeros_of_a_scalar_is_the_scalar():
  for value in (0., 3.):
    for trim in ("f", "b", "fb"):
      got = jnp.trim_zeros(np.float32(value), trim)
      assert got.shape == () and float(got) == value


@pytest.mark.parametrize("collection", [tuple, list, set, dict])
@pytest.mark.parametrize("name,symbol", [("add", "+"), ("sub", "-"), ("mul", "*"),
                                         ("matmul", "@"), ("lt", "<"), ("eq", "==")])
def test_builtin_collections_are_rejected_naming_both_types_in_order(collection, name, symbol):
  arr = jnp.array([[1, 2], [2, 3]])
  other = collection([(1, 2), (2, 3)])
  op = getattr(operator, name)
  with pytest.raises(TypeError, match=re.escape(f"for {symbol}: 'ArrayImpl' and '{collection.__name__}'")):
    op(arr, other)
  if name not in ("lt", "eq"):  # comparisons reflect to the other comparison
    with pytest.raises(TypeError,
                       match=re.escape(f"for {symbol}: '{collection.__name__}' and 'ArrayImpl'")):
      op(other, arr)

"""Small pieces of JAX's API: Lowered.args_info, copy_to_host_async, ClosedJaxpr fields."""
import unittest.mock

import numpy as np

import hlox
import hlox.numpy as jnp


def test_lowered_args_info_marks_donated_leaves():
  f = hlox.jit(lambda x, y: (x, y * 2), donate_argnums=1)
  x = {"A": np.ones(2, np.float32), "B": np.float32(2)}
  args, kwargs = f.lower(x, np.ones(3, np.float32)).args_info
  assert kwargs == {}
  assert not args[0]["A"].donated and not args[0]["B"].donated and args[1].donated
  assert args[0]["A"].shape == (2,) and args[1].dtype == np.float32
  g = hlox.jit(lambda z, y: (z, y), donate_argnames=("z",))
  _, kw = g.lower(z={"c": np.ones(2)}, y=np.ones(2)).args_info
  assert kw["z"]["c"].donated and not kw["y"].donated


def test_copy_to_host_async_calls_each_leaf_and_returns_its_argument():
  mock = unittest.mock.Mock()
  mock.copy_to_host_async.return_value = None
  tree = [object(), 1, mock, jnp.arange(3.0)]
  assert hlox.copy_to_host_async(tree) is tree
  mock.copy_to_host_async.assert_called_once()
  np.testing.assert_array_equal(np.asarray(tree[3]), [0.0, 1.0, 2.0])
  raising = unittest.mock.Mock()
  raising.copy_to_host_async.side_effect = AttributeError("foo")
  try:
    hlox.copy_to_host_async(raising)
  except AttributeError as e:
    assert "foo" in str(e)
  else:
    raise AssertionError("the method's own AttributeError was hidden")


def test_closed_jaxpr_exposes_its_variables():
  c = np.arange(3.0, dtype=np.float32)
  closed = hlox.make_jaxpr(lambda x: x * c + 1.0)(np.ones(3, np.float32))
  assert closed.invars == closed.jaxpr.invars and len(closed.invars) == 1
  assert closed.outvars == closed.jaxpr.outvars and len(closed.outvars) == 1
  assert closed.constvars == closed.jaxpr.constvars

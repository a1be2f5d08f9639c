"""Objects with ``__jax_array__`` are accepted wherever ``hlox.numpy`` accepts arrays, also
by the functions that look at an argument (its dtype, shape or concrete value) before
converting it; duck-typed ``shape``/``dtype`` objects stay preferred by the ``*_like``
functions; objects whose ``__jax_array__`` gives no array still raise TypeError."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp


@hlox.tree_util.register_dataclass
@dataclasses.dataclass
class Wrapper:
  """A pytree that turns itself into an array."""
  x: object

  def __jax_array__(self):
    return jnp.asarray(self.x)


class Opaque:
  """Not a pytree: only the protocol makes it an array."""

  def __init__(self, x):
    self.x = x

  def __jax_array__(self):
    return jnp.asarray(self.x)


class NotAnArray:
  def __jax_array__(self):
    return "not an array"


class Duck:
  """``shape``/``dtype`` are enough for the ``*_like`` functions: ``__jax_array__`` is not
  called."""
  shape = (2, 3)
  dtype = np.dtype("float32")

  def __jax_array__(self):
    raise AssertionError("__jax_array__ should not be called")


_f5 = np.array([0., 1.5, -2., 0., 3.], np.float32)
_i5a = np.array([1, 3, 4, 3, 0], np.int32)
_i5b = np.array([3, 2, 2, 0, 5], np.int32)
_i10 = np.array([3, 1, 1, 0, 3, 2, 2, 0, 1, 3], np.int32)
_c3 = np.array([1 + 2j, 3, -1j], np.complex64)

# (function name, arguments, keywords, NumPy's result)
_CASES = [
    ("zeros_like", (_f5,), {}, np.zeros(5, np.float32)),
    ("ones_like", (_f5,), {}, np.ones(5, np.float32)),
    ("empty_like", (_f5,), {}, np.zeros(5, np.float32)),
    ("full_like", (_f5, np.float32(2.5)), {}, np.full(5, 2.5, np.float32)),
    ("full_like", (_f5, np.arange(5, dtype=np.float32)), {}, np.arange(5, dtype=np.float32)),
    ("setdiff1d", (_i5a, _i5b), {}, np.setdiff1d(_i5a, _i5b)),
    ("setxor1d", (_i5a, _i5b), {}, np.setxor1d(_i5a, _i5b)),
    ("intersect1d", (_i5a, _i5b), {}, np.intersect1d(_i5a, _i5b)),
    ("size", (_f5,), {}, 5),
    ("trim_zeros", (_f5,), {}, np.array([1.5, -2., 0., 3.], np.float32)),
    ("unique", (_i10,), {}, np.array([0, 1, 2, 3])),
    ("unique_values", (_i10,), {}, np.array([0, 1, 2, 3])),
    ("unique_counts", (_i10,), {}, (np.array([0, 1, 2, 3]), np.array([2, 3, 2, 3]))),
    ("unique_inverse", (_i10,), {}, (np.array([0, 1, 2, 3]), np.unique(_i10, return_inverse=True)[1])),
    ("vsplit", (np.arange(6, dtype=np.float32),), {"indices_or_sections": 2},
     [np.array([0., 1., 2.], np.float32), np.array([3., 4., 5.], np.float32)]),
    ("delete", (_f5, np.int32(1)), {}, np.delete(_f5, 1)),
    ("insert", (_f5, np.int32(1), np.array([7., 8.], np.float32)), {},
     np.insert(_f5, 1, [7., 8.])),
    ("iscomplexobj", (_c3,), {}, True),
    ("isrealobj", (_f5,), {}, True),
    ("isrealobj", (_c3,), {}, False),
    ("nonzero", (_f5,), {}, (np.array([1, 2, 4]),)),
    ("roll", (_f5, np.array([2], np.int32)), {}, np.roll(_f5, 2)),
]


def _check(actual, expected):
  if isinstance(expected, (bool, int)):
    assert actual == expected and type(actual) is type(expected)
    return
  if isinstance(expected, (tuple, list)):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
      _check(a, e)
    return
  assert isinstance(actual, hlox.Array)
  np.testing.assert_array_equal(np.asarray(actual), expected)


@pytest.mark.parametrize("wrap", [Wrapper, Opaque], ids=["pytree", "opaque"])
@pytest.mark.parametrize("name,args,kwargs,expected", _CASES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(_CASES)])
def test_wrapped_arguments_match_arrays(wrap, name, args, kwargs, expected):
  fun = getattr(jnp, name)
  _check(fun(*args, **kwargs), expected)
  _check(fun(*map(wrap, args), **kwargs), expected)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_functions_read_shape_and_dtype_of_duck_types(name):
  fun = getattr(jnp, name)
  out = fun(Duck(), 2.0) if name == "full_like" else fun(Duck())
  assert isinstance(out, hlox.Array) and out.shape == (2, 3) and out.dtype == np.float32
  if name == "full_like":
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0, np.float32))
    # An array fill value broadcasts to the duck type's shape, in its dtype.
    out = jnp.full_like(Duck(), np.arange(3))
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(3.), (2, 3)))
    assert out.dtype == np.float32


def test_wrappers_under_jit_vmap_grad():
  x = np.arange(5, dtype=np.float32)
  np.testing.assert_array_equal(hlox.jit(jnp.roll)(Wrapper(x), Wrapper(np.array([1]))),
                                np.roll(x, 1))
  np.testing.assert_array_equal(hlox.jit(jnp.zeros_like)(Wrapper(x)), np.zeros(5))
  np.testing.assert_array_equal(
      hlox.jit(lambda w: jnp.insert(x, w, 7.))(Wrapper(np.int32(2))), np.insert(x, 2, 7.))
  np.testing.assert_array_equal(
      hlox.jit(lambda w: jnp.delete(x, w, assume_unique_indices=True))(Wrapper(np.int32(2))),
      np.delete(x, 2))
  np.testing.assert_array_equal(
      hlox.jit(lambda w: jnp.unique(w, size=3))(Wrapper(np.array([1, 1, 2, 5]))), [1, 2, 5])
  np.testing.assert_array_equal(
      hlox.jit(lambda w: jnp.nonzero(w, size=3)[0])(Wrapper(x)), [1, 2, 3])
  # A traced shift inside a wrapper rolls per batch entry.
  rolled = hlox.vmap(lambda s: jnp.roll(x, Wrapper(s)))(np.arange(3))
  np.testing.assert_array_equal(rolled, [np.roll(x, s) for s in range(3)])
  # Gradients flow through the wrapper (a pytree: its gradient is a wrapper too).
  g = hlox.grad(lambda w: jnp.sum(jnp.sin(w) * jnp.ones_like(w)))(Wrapper(x))
  assert isinstance(g, Wrapper)
  np.testing.assert_allclose(g.x, np.cos(x), rtol=1e-6)
  g = hlox.grad(lambda y: jnp.sum(jnp.full_like(Wrapper(y), 2.) * y))(x)
  np.testing.assert_array_equal(g, np.full(5, 2.))


def test_opaque_objects_are_not_jit_arguments():
  with pytest.raises(ValueError, match="Triggering __jax_array__"):
    hlox.jit(jnp.sin)(Opaque(np.arange(3.)))


@pytest.mark.parametrize("call", [
    lambda: jnp.roll(np.arange(3.), NotAnArray()),
    lambda: jnp.unique(NotAnArray()),
    lambda: jnp.zeros_like(NotAnArray()),
    lambda: jnp.setdiff1d(NotAnArray(), np.arange(3)),
    lambda: jnp.iscomplexobj(NotAnArray()),
    lambda: jnp.nonzero(NotAnArray()),
    lambda: jnp.trim_zeros(NotAnArray()),
    lambda: jnp.insert(np.arange(3.), NotAnArray(), 1.),
    lambda: jnp.delete(np.arange(3.), NotAnArray()),
], ids=["roll", "unique", "zeros_like", "setdiff1d", "iscomplexobj", "nonzero", "trim_zeros",
        "insert", "delete"])
def test_bad_jax_array_results_raise_type_error(call):
  with pytest.raises(TypeError, match="not a valid JAX array type|cannot convert"):
    call()


def test_split_variants_follow_jax():
  # JAX's vsplit splits 1-d arrays along axis 0 (NumPy refuses them).
  parts = jnp.vsplit(np.arange(6.), 3)
  assert [p.tolist() for p in parts] == [[0., 1.], [2., 3.], [4., 5.]]
  with pytest.raises(IndexError, match="vsplit"):
    jnp.vsplit(np.float32(1.), 1)
  with pytest.raises(IndexError, match="hsplit"):
    jnp.hsplit(np.float32(1.), 1)
  with pytest.raises(IndexError, match="dsplit"):
    jnp.dsplit(np.ones((2, 4)), 2)


def test_numpy_conversion_finds_no_attribute_hooks():
  # NumPy probes __array_struct__ / __array_interface__ before __array__: an Array answers
  # them as a plain object does (no __getattr__ to run), and converts through __array__
  # to its cached read-only value.
  import hlox
  x = hlox.numpy.arange(6.).reshape(2, 3)
  assert not hasattr(type(x), "__getattr__")
  assert not hasattr(x, "__array_struct__") and not hasattr(x, "__array_interface__")
  first, second = np.asarray(x), np.asarray(x)
  assert first is second and not first.flags.writeable
  np.testing.assert_array_equal(first, np.arange(6.).reshape(2, 3))
  x.user_attribute = 3  # Arrays take user attributes, as JAX's
  assert x.user_attribute == 3 and x._laid_out is None
  with pytest.raises(AttributeError, match="no attribute 'missing'"):
    x.missing

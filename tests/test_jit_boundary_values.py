"""Values that cross the jit boundary without data (tokens, float0), and jit's argument
rules: static_argnums with static_argnames, ``_cache_size``, ``__jax_array__`` objects,
Python ints too large for an integer dtype, explained cache misses; vmappable types."""
import functools
import logging

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import explain_cache_misses
from hlox.core.avals import Token
from hlox.core.tracer import Tracer
from hlox.dtypes import float0
from hlox.interpreters import batching

from util import assert_close


def test_tokens_pass_in_and_out_of_jit():
  assert isinstance(hlox.jit(lax.create_token)(1.0), Token)
  tok = lax.create_token()
  for _ in range(2):  # the slow path, then the cache-hit path
    y, t = hlox.jit(lambda x: (x + 2, tok))(7)
    assert int(y) == 9 and isinstance(t, Token)
  noop = hlox.jit(lambda arr, token: (arr, token))
  for _ in range(2):
    arr, out = noop(jnp.ones(3), tok)
    assert isinstance(out, Token) and out is not tok
    assert_close(arr, np.ones(3))
  t, y = hlox.jit(lambda t, x: (lax.after_all(t, lax.create_token()), x * 2))(tok, 3.)
  assert isinstance(t, Token) and float(y) == 6.
  compiled = hlox.jit(lambda a, t: (a * 2, t)).lower(jnp.ones(2), tok).compile()
  a, t = compiled(jnp.ones(2), tok)
  assert isinstance(t, Token)
  assert_close(a, 2 * np.ones(2))


def test_float0_values_through_jit():
  grad_f = hlox.grad(lambda x, i: x[i], argnums=(0, 1), allow_int=True)
  for _ in range(2):
    gx, gi = hlox.jit(grad_f)(np.ones(2), 1)
    assert_close(gx, np.array([0., 1.], np.float32))
    assert isinstance(gi, np.ndarray) and gi.dtype == float0
  _, f_vjp = hlox.vjp(lambda x, y: x + y, 2, 1)
  tx, ti = hlox.jit(f_vjp)(np.zeros((), float0))
  assert tx.dtype == float0 and ti.dtype == float0
  out = hlox.jit(lambda x: x)(np.zeros((3,), float0))
  assert isinstance(out, np.ndarray) and out.dtype == float0 and out.shape == (3,)
  # A float0 Array (made by device_put) reads as zeros.
  assert hlox.device_put(np.zeros((2,), float0)).__array__().dtype == float0


def test_operations_on_float0_raise_typeerror():
  f0 = hlox.grad(lambda x: x + 0., allow_int=True)(1)
  with pytest.raises(TypeError, match="float0s do not support any operations by design"):
    f0 + jnp.zeros(())
  with pytest.raises(TypeError, match="Called add with a float0 array"):
    lax.add(f0, jnp.zeros(()))


def test_static_argnums_and_argnames_both_given_stand_as_written():
  seen = []

  def f(x, y):
    seen.append((isinstance(x, Tracer), isinstance(y, Tracer)))
    return 1
  nums = hlox.jit(f, static_argnums=1, static_argnames=())
  nums(2, "foo")
  nums(1, y=2)
  names = hlox.jit(f, static_argnums=(), static_argnames="y")
  names(2, 3)
  names(1, y="foo")
  mixed = hlox.jit(f, static_argnums=(1,), static_argnames="x")
  mixed(x="foo", y=3)
  # One of them given: the other is completed from the signature.
  hlox.jit(f, static_argnums=1)(1, y="bar")
  assert seen == [(True, False), (True, True), (True, True), (True, False), (False, True),
                  (True, False)]


def test_cache_size_counts_signatures():
  f = hlox.jit(lambda x: (x ** 2).sum())
  assert f._cache_size() == 0
  for _ in range(3):
    f(jnp.arange(5.))
  assert f._cache_size() == 1
  f(jnp.arange(6.))
  assert f._cache_size() == 2


def test_objects_with_jax_array():
  @functools.partial(hlox.tree_util.register_dataclass, data_fields=["val"], meta_fields=[])
  class Wrapped:
    def __init__(self, val):
      self.val = val

    def __jax_array__(self):
      return self.val
  x = Wrapped(jnp.array([1., 2., 3.]))
  assert_close(jnp.sin(x), np.sin([1., 2., 3.]).astype(np.float32))
  assert_close(hlox.jit(jnp.matmul)(x, x), np.float32(14.))
  g = hlox.grad(hlox.jit(lambda w: jnp.sin(w).sum()))(x)
  assert isinstance(g, Wrapped)
  assert_close(jnp.asarray(g), np.cos([1., 2., 3.]).astype(np.float32))

  class Loose:  # not a pytree: jit does not convert it
    def __jax_array__(self):
      return jnp.arange(4)
  with pytest.raises(ValueError, match=r"Triggering __jax_array__\(\) during "
                                       "abstractification is no longer supported"):
    hlox.jit(lambda v: v)(Loose())


def test_large_python_ints():
  with pytest.raises(OverflowError):
    jnp.multiply(2 ** 100, 3.)
  assert lax.convert_element_type(2 ** 100, jnp.float32) == np.float32(2 ** 100)
  assert lax.convert_element_type(7, jnp.float32).dtype == np.float32


def test_cache_miss_explains_changed_options(caplog):
  @hlox.jit
  def f(x, y):
    return jnp.sin(x) + y
  f(0., 1.)
  with explain_cache_misses(True), caplog.at_level(logging.WARNING):
    with hlox.numpy_rank_promotion("warn"), hlox.default_matmul_precision("high"):
      f(0., 1.)
  text = caplog.text
  assert "tracing context doesn't match" in text
  assert "numpy_rank_promotion differs: now warn and before allow" in text
  assert "default_matmul_precision differs: now high and before None" in text


class _Named:
  def __init__(self, names, data):
    self.names, self.data = list(names), data


class _Spec:
  def __init__(self, name, axis):
    self.name, self.axis = name, axis


def _named_to_elt(cont, _, val, spec):
  names = list(val.names)
  assert names.pop(spec.axis) == spec.name
  return _Named(names, cont(val.data, spec.axis))


def _named_from_elt(cont, size, elt, spec):
  names = list(elt.names)
  names.insert(spec.axis, spec.name)
  return _Named(names, cont(size, elt.data, spec.axis))


def test_vmappable_types():
  batching.register_vmappable(_Named, _Spec, int, _named_to_elt, _named_from_elt, None)
  try:
    x = _Named(["i", "j"], jnp.arange(12.).reshape(3, 4))
    out = hlox.vmap(lambda v: _Named(v.names, v.data * v.data), in_axes=_Spec("i", 0),
                    out_axes=_Spec("i", 1), axis_size=3)(x)
    assert out.names == ["j", "i"]
    assert_close(out.data, np.arange(12., dtype=np.float32).reshape(3, 4).T ** 2)
    # Ordinary arrays beside them are mapped as usual.
    assert_close(hlox.vmap(lambda a, b: a * b, in_axes=(0, None))(jnp.arange(3.), 2.),
                 np.array([0., 2., 4.], np.float32))
  finally:
    batching.unregister_vmappable(_Named)
  assert _Named not in batching.vmappables and _Spec not in batching.spec_types


def test_token_buffer_has_no_host_value():
  # As JAX: a token's device buffer cannot be read as an array.
  tok = lax.create_token()
  with pytest.raises(RuntimeError, match="Cannot convert a token-shape buffer"):
    tok._buf._value
  with pytest.raises(RuntimeError, match="Cannot convert a token-shape buffer"):
    np.asarray(tok._buf)
  assert tok.block_until_ready() is tok


class _HashableWithoutEq:
  def __hash__(self):
    return 1

  def __eq__(self, other):
    raise NotImplementedError("no comparison")


@pytest.mark.parametrize("how", ["positional", "keyword", "donated"])
def test_static_argument_whose_eq_raises(how):
  # Two static values with equal hashes are compared to find the cached program; a failing
  # ``==`` is JAX's ValueError (the first call compares nothing: a different type's key).
  if how == "positional":
    f = hlox.jit(lambda x, y: x + 3, static_argnums=1)
    call = lambda y: f(1, y)
  elif how == "keyword":
    f = hlox.jit(lambda x, y: x + 3, static_argnames="y")
    call = lambda y: f(1, y=y)
  else:  # no cache-hit path: the slow path's own keys compare
    f = hlox.jit(lambda x, y: x + 3, static_argnums=1, donate_argnums=0)
    call = lambda y: f(jnp.ones(2), y)
  call(1)
  assert_close(call(_HashableWithoutEq()), np.full(np.shape(call(1)), 4))
  with pytest.raises(ValueError, match=r"static arguments should be comparable using __eq__"
                     r".*_HashableWithoutEq.*NotImplementedError: no comparison"):
    call(_HashableWithoutEq())
  # A static value that compares fine still hits its entry.
  assert_close(call(1), np.full(np.shape(call(1)), 4))

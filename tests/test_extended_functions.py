"""The functions that take typed keys (``ACCEPTING_KEYS`` of ``hlox.numpy`` / ``hlox.lax``)
consult the key registry (``core.extended_functions``) only when they refuse an operand:
the public names are the plain functions, and an ordinary call runs no code of the
registry. Calls with keys reach it through ``refused``; bad input keeps its errors."""
import inspect
import sys

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.core import extended_functions


def _declared():
  return [(jnp, name) for name in jnp.ACCEPTING_KEYS] + [
      (lax, name) for name in lax.ACCEPTING_KEYS]


@pytest.mark.parametrize("namespace,name", _declared(),
                         ids=[f"{ns.__name__}.{n}" for ns, n in _declared()])
def test_public_function_is_the_function_itself(namespace, name):
  # No wrapper in front: the name is bound to the object its defining module holds
  # (for hlox.numpy's fused functions, the ``eager_fused`` one, whose only Python frame is
  # the function itself when traced).
  public = getattr(namespace, name)
  defining = sys.modules[inspect.unwrap(public).__module__]
  assert getattr(defining, name) is public


def _calls_into(module_file, fn):
  """The Python functions of ``module_file`` entered while ``fn()`` runs."""
  seen = []

  def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == module_file:
      seen.append(frame.f_code.co_name)

  sys.setprofile(profile)
  try:
    fn()
  finally:
    sys.setprofile(None)
  return seen


_ORDINARY = [
    lambda x: jnp.where(x > 1, x, 0.),
    lambda x: jnp.reshape(x, (2, 3)),
    lambda x: jnp.concatenate([x, x]),
    lambda x: jnp.squeeze(x[None]),
    lambda x: jnp.zeros_like(x) == x,
    lambda x: lax.broadcast_in_dim(x, (2, 6), (1,)),
    lambda x: lax.squeeze(x[None], (0,)),
    lambda x: lax.concatenate([x, x], 0),
    lambda x: lax.dynamic_slice(x, (1,), (2,)),
    lambda x: lax.dynamic_update_slice(x, x[:2], (1,)),
]


@pytest.mark.parametrize("i", range(len(_ORDINARY)))
def test_ordinary_calls_run_no_registry_code(i):
  fn = _ORDINARY[i]
  x = jnp.arange(6.)
  fn(x)  # compile first
  registry = extended_functions.__file__
  assert _calls_into(registry, lambda: fn(x)) == []
  assert _calls_into(registry, lambda: hlox.make_jaxpr(fn)(x)) == []


def test_key_calls_go_through_refused():
  # (A fused function such as ``jnp.where`` caches what its first call traced: later calls
  # with keys of that type run no Python at all. Seven keys: a shape no other test uses.)
  ks = hlox.random.split(hlox.random.key(0), 7)
  registry = extended_functions.__file__
  for fn in (lambda: lax.squeeze(ks[None], (0,)), lambda: lax.concatenate([ks, ks], 0),
             lambda: lax.dynamic_slice(ks, (1,), (2,)),
             lambda: lax.dynamic_update_slice(ks, ks[:2], (1,)),
             lambda: jnp.squeeze(ks[None]), lambda: jnp.where(True, ks, ks[::-1])):
    out = []
    assert "refused" in _calls_into(registry, lambda: out.append(fn()))
    assert out[0].dtype == ks.dtype


def test_the_four_lax_functions_on_keys():
  ks = hlox.random.split(hlox.random.key(0), 6).reshape(2, 3)
  data = np.asarray(hlox.random.key_data(ks))

  def of(k):
    assert k.dtype == ks.dtype
    return np.asarray(hlox.random.key_data(k))

  np.testing.assert_array_equal(of(lax.squeeze(ks[None], (0,))), data)
  np.testing.assert_array_equal(of(lax.squeeze(ks[:, :1], -1)), data[:, 0])
  np.testing.assert_array_equal(of(lax.concatenate([ks, ks[:, :1]], -1)),
                                np.concatenate([data, data[:, :1]], 1))
  np.testing.assert_array_equal(of(lax.dynamic_slice(ks, (1, 1), (1, 2))), data[1:, 1:])
  np.testing.assert_array_equal(of(hlox.jit(lambda k, i: lax.dynamic_slice(k, (0, i), (2, 1)))(
      ks, 2)), data[:, 2:])
  expected = data.copy()
  expected[1, :2] = data[0, 1:]
  np.testing.assert_array_equal(of(lax.dynamic_update_slice(ks, ks[:1, 1:], (1, 0))),
                                expected)
  np.testing.assert_array_equal(of(hlox.vmap(lambda k: lax.squeeze(k[None], (0,)))(ks)), data)


@pytest.mark.parametrize("call,error,message", [
    (lambda ks, x: lax.squeeze("a", (0,)), TypeError, "is not a valid JAX type"),
    (lambda ks, x: lax.squeeze(ks[None], (4,)), ValueError, "axis 4 is out of bounds"),
    (lambda ks, x: lax.squeeze(x, (0,)), ValueError, "size not equal to one"),
    (lambda ks, x: lax.concatenate([ks, x], 0), TypeError, "can only be joined with keys"),
    (lambda ks, x: lax.concatenate([x, ks], 0), TypeError, "can only be joined with keys"),
    (lambda ks, x: lax.concatenate([ks, ks], 5), ValueError, "dimension 5 is out of bounds"),
    (lambda ks, x: lax.concatenate([x, x[:, :1]], 0), TypeError, "Cannot concatenate"),
    (lambda ks, x: lax.dynamic_slice("a", (0,), (1,)), TypeError, "not a valid JAX type"),
    (lambda ks, x: lax.dynamic_slice(ks, (0,), (1,)), ValueError, "number of start indices"),
    (lambda ks, x: lax.dynamic_update_slice(ks, x[:1, :2], (1, 1)), TypeError,
     "can only be updated with keys"),
    (lambda ks, x: lax.dynamic_update_slice(x, ks[:1, :2], (1, 1)), TypeError,
     "Error interpreting argument to dynamic_update_slice"),
    (lambda ks, x: jnp.squeeze("a"), TypeError, "squeeze requires ndarray or scalar"),
    (lambda ks, x: jnp.squeeze(x, 0), ValueError, "size not equal to one"),
    (lambda ks, x: jnp.where(ks, 1., 2.), TypeError, "same implementation"),
    (lambda ks, x: jnp.where(True, "a", 1.), TypeError, "requires ndarray or scalar"),
    (lambda ks, x: jnp.reshape("a", (1,)), TypeError, "requires ndarray or scalar"),
    (lambda ks, x: jnp.zeros(3, dtype="foo"), TypeError, "invalid dtype"),
    (lambda ks, x: jnp.equal(x, "a"), TypeError, "requires ndarray or scalar"),
    (lambda ks, x: jnp.sin(ks), TypeError, "sin does not accept dtype key<fry>"),
    (lambda ks, x: lax.transpose(x, (0,)), TypeError, "not a permutation"),
    (lambda ks, x: lax.reshape(x, (7,)), TypeError, "cannot reshape"),
])
def test_bad_input_keeps_its_error(call, error, message):
  ks = hlox.random.split(hlox.random.key(0), 6).reshape(2, 3)
  x = jnp.arange(6.).reshape(2, 3)
  with pytest.raises(error, match=message):
    call(ks, x)

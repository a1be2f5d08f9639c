"""The key-reuse checker (``hlox.experimental.key_reuse``): signatures, static checks of
traced functions, and eager checks under ``debug_key_reuse``."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.errors import KeyReuseError
from hlox.experimental.key_reuse import _core
from hlox.experimental.key_reuse._core import (Forward, KeyReuseSignature, Sink, Source,
                                               assert_consumed, assert_unconsumed, consume)


def key():
  return hlox.random.key(0)


# --- signature objects ---------------------------------------------------------------------

def test_signature_values():
  mixed = np.array([True, False])
  assert Sink(0) == Sink(0, True) == Sink(0, np.array([True, True]))
  assert hash(Sink(0)) == hash(Sink(0, np.array([True, True])))
  assert Source(0, False) == Source(0, np.zeros(2, bool))
  assert Sink(0) != Source(0) and Sink(0) != Sink(1) and Sink(0) != Sink(0, mixed)
  assert Sink(0, np.zeros(0, bool)) == Sink(0, False)  # an empty mask consumes nothing
  s = Sink(0, mixed)
  assert not s.mask.flags.writeable and mixed.flags.writeable
  with pytest.raises(ValueError):
    s.idx = 1
  assert KeyReuseSignature(Sink(0), Forward(1, 0)) == KeyReuseSignature(Forward(1, 0), Sink(0))
  assert repr(KeyReuseSignature(Forward(0, 1), Source(0), Sink(1), Sink(0))) == \
      "KeyReuseSignature(Sink(0), Sink(1), Source(0), Forward(0, 1))"
  assert repr(Sink(1, mixed)) == "Sink(1, [ True False])"


# --- signatures of functions ---------------------------------------------------------------

@pytest.mark.parametrize("fun,args,expected", [
    (hlox.random.bits, (key(),), KeyReuseSignature(Sink(0))),
    (hlox.random.uniform, (key(),), KeyReuseSignature(Sink(0))),
    (hlox.random.split, (key(),), KeyReuseSignature(Sink(0), Source(0))),
    (lambda k: hlox.random.fold_in(k, 3), (key(),), KeyReuseSignature(Source(0))),
    (hlox.random.clone, (key(),), KeyReuseSignature(Source(0))),
    (hlox.random.key_data, (key(),), KeyReuseSignature()),
    (hlox.random.wrap_key_data, (np.zeros(2, np.uint32),), KeyReuseSignature(Source(0))),
    (consume, (key(),), KeyReuseSignature(Sink(0), Forward(0, 0))),
    (lambda k: k[None], (key(),), KeyReuseSignature(Forward(0, 0))),
    (lambda k: k.reshape((1,)), (key(),), KeyReuseSignature(Forward(0, 0))),
    (lambda k: k[0], (hlox.random.split(key()),),
     KeyReuseSignature(Sink(0, np.array([True, False])), Source(0))),
    (lambda a, b: lax.concatenate([a, b], 0), (hlox.random.split(key()),) * 2,
     KeyReuseSignature(Sink(0), Sink(1), Source(0))),
    (lambda a, b: a == b, (key(), key()), KeyReuseSignature()),
    (hlox.jit(lambda k: (k, k)), (key(),), KeyReuseSignature(Forward(0, 0), Forward(0, 1))),
])
def test_function_signatures(fun, args, expected):
  assert _core.function_type_signature(fun, *args) == expected
  assert _core.jaxpr_type_signature(hlox.make_jaxpr(fun)(*args)) == expected


def test_assertions_follow_consumption():
  def f(k):
    assert_unconsumed(k)
    k2 = hlox.random.split(k)
    assert_consumed(k)
    assert_unconsumed(k2)
    k3 = hlox.random.clone(k)
    assert_unconsumed(k3)
    hlox.random.bits(k2[0])
    assert_consumed(k2, np.array([True, False]))
  _core.check_key_reuse(f, key())
  with pytest.raises(AssertionError, match="Expected key to be consumed"):
    _core.check_key_reuse(assert_consumed, key())


# --- static checks ------------------------------------------------------------------------

def _reuse(k):
  return hlox.random.uniform(k) + hlox.random.uniform(k)


def _good(k):
  a, b = hlox.random.split(k)
  folded = [hlox.random.fold_in(k, i) for i in range(3)]  # fold_in does not consume
  return hlox.random.uniform(a) + hlox.random.normal(b) + sum(
      hlox.random.bits(f) for f in folded)


@pytest.mark.parametrize("fun,message", [
    (_reuse, "In jit, argument 0 is already consumed."),
    (lambda k: hlox.random.bits(k) + hlox.random.bits(k),
     "In random_bits, argument 0 is already consumed."),
    (lambda k: (hlox.random.split(k), hlox.random.split(k)),
     "In random_split, argument 0 is already consumed."),
    (lambda k: hlox.random.bits(k) + hlox.random.bits(k.reshape((1,)).squeeze()),
     "In random_bits, argument 0 is already consumed."),
    (lambda k: lax.cond(True, hlox.random.uniform, lambda k: 1.0, k) + hlox.random.uniform(k),
     "In jit, argument 0 is already consumed."),
    (lambda k: lax.scan(lambda c, _: (c, hlox.random.bits(c)), k, jnp.arange(3)),
     "scan body function leads to key reuse"),
    (lambda k: lax.scan(lambda c, _: (c, hlox.random.bits(k)), 0, jnp.arange(3)),
     "scan body function leads to key reuse"),
    (lambda k: lax.while_loop(lambda c: c[0] < 3,
                              lambda c: (c[0] + hlox.random.bits(c[1]), c[1]),
                              (jnp.uint32(0), k)),
     "while_loop body function leads to key reuse"),
    (lambda k: lax.while_loop(lambda i: i < hlox.random.uniform(k), lambda i: i + 1., 0.),
     "while_loop cond function leads to key reuse"),
    (hlox.checkpoint(_reuse), "In jit, argument 0 is already consumed."),
])
def test_reuse_detected(fun, message):
  with pytest.raises(KeyReuseError, match=message.replace("(", r"\(").replace(")", r"\)")):
    _core.check_key_reuse(fun, key())
  with pytest.raises(KeyReuseError, match="In jit, argument 0"):
    _core.check_key_reuse(hlox.vmap(lambda s: _reuse(hlox.random.key(0))), jnp.arange(2))


def test_legitimate_uses_pass():
  _core.check_key_reuse(_good, key())
  _core.check_key_reuse(hlox.jit(_good), key())
  _core.check_key_reuse(lambda k: lax.cond(True, hlox.random.uniform, hlox.random.normal, k),
                        key())
  _core.check_key_reuse(lambda k: lax.scan(_scan_step, k, jnp.arange(3)), key())
  _core.check_key_reuse(lambda k: lax.map(hlox.random.bits, hlox.random.split(k, 4)), key())
  _core.check_key_reuse(lambda k: lax.while_loop(lambda c: c[1] < 3., _while_step, (k, 0.)),
                        key())
  _core.check_key_reuse(hlox.grad(hlox.checkpoint(
      lambda x, k: x * hlox.random.uniform(k))), 1.0, key())
  _core.check_key_reuse(hlox.vmap(lambda s: hlox.random.bits(hlox.random.key(s))),
                        jnp.arange(3))


def _scan_step(c, _):
  c, sub = hlox.random.split(c)
  return c, hlox.random.bits(sub)


def _while_step(c):
  k, sub = hlox.random.split(c[0])
  return k, c[1] + hlox.random.uniform(sub)


# --- eager checks (debug_key_reuse) --------------------------------------------------------

def test_eager_reuse_raises_only_with_the_flag():
  k = key()
  hlox.random.bits(k)
  hlox.random.bits(k)  # off: nothing is recorded
  with hlox.debug_key_reuse(True):
    k = key()
    hlox.random.uniform(k)
    assert k._consumed
    with pytest.raises(KeyReuseError, match="Previously-consumed key passed to "
                       "jit-compiled function at index 0"):
      hlox.random.uniform(k)
    with hlox.disable_jit():
      k2 = key()
      hlox.random.bits(k2)
      with pytest.raises(KeyReuseError, match="Previously-consumed key passed to "
                         "random_bits at index 0"):
        hlox.random.bits(k2)
    k3 = key()
    a, b = hlox.random.split(k3)
    hlox.random.bits(a), hlox.random.bits(b), hlox.random.fold_in(k3, 1)  # all fine
    c = hlox.random.clone(k3)
    assert c is not k3 and not c._consumed and k3._consumed
    hlox.random.bits(c)


def test_eager_jit_checks():
  with hlox.debug_key_reuse(True):
    k = key()

    @hlox.jit
    def closed():
      return hlox.random.uniform(k)
    closed()
    with pytest.raises(KeyReuseError, match="jit-compiled function at index 0"):
      closed()

    @hlox.jit
    def bad(k):
      return hlox.random.bits(k) + hlox.random.bits(k)
    with pytest.raises(KeyReuseError, match="In random_bits, argument 0 is already consumed"):
      bad(key())
    keep = hlox.jit(lambda k: k)
    k4 = key()
    out = keep(k4)
    assert not out._consumed
    hlox.random.bits(out)
  bad(key())  # unchecked once the option is off


@pytest.mark.jax_oracle
def test_signatures_match_jax():
  pytest.importorskip("jax")
  from tests.util import run_in_jax
  program = """
from jax.experimental.key_reuse import _core
import numpy as np
k = jax.random.key(0)
ks = jax.random.split(k)
cases = {
  'bits': (jax.random.bits, (k,)), 'split': (jax.random.split, (k,)),
  'uniform': (jax.random.uniform, (k,)), 'clone': (jax.random.clone, (k,)),
  'index': (lambda ks: ks[1], (ks,)), 'reshape': (lambda k: k.reshape((1,)), (k,)),
  'consume': (_core.consume, (k,)),
  'jit_pair': (jax.jit(lambda k: (k, k)), (k,)),
  'cond': (lambda k: jax.lax.cond(True, jax.random.uniform, lambda k: 1.0, k), (k,)),
  'reuse': (lambda k: jax.random.bits(k) + jax.random.bits(k), (k,)),
  'scan_reuse': (lambda k: jax.lax.scan(lambda c, _: (c, jax.random.bits(c)), k,
                                        jnp.arange(3)), (k,)),
}
result = {}
for name, (f, args) in cases.items():
  try:
    result[name] = repr(_core.function_type_signature(f, *args))
  except Exception as e:
    result[name] = type(e).__name__ + ': ' + str(e).split(chr(10))[0]
"""
  runner = ("import json, sys\nimport numpy as np\nimport jax, jax.numpy as jnp\n"
            "ns = {'jax': jax, 'jnp': jnp, 'np': np}\nexec(json.loads(sys.stdin.read()), ns)\n"
            "print(json.dumps(ns['result']))\n")
  expected = run_in_jax(runner, program)
  namespace = {"jax": hlox, "jnp": jnp, "np": np, "_core": _core}
  exec(program.replace("from jax.experimental.key_reuse import _core", ""), namespace)
  assert namespace["result"] == expected
  assert expected["reuse"].startswith("KeyReuseError: In random_bits")


def test_raw_keys_are_not_tracked():
  with hlox.debug_key_reuse(True):
    raw = hlox.random.PRNGKey(0)
    a = hlox.random.uniform(raw)
    b = hlox.random.uniform(raw)  # JAX checks typed keys only
    assert float(a) == float(b)
    with hlox.disable_jit():
      hlox.random.bits(raw), hlox.random.bits(raw)
  _core.check_key_reuse(lambda k: hlox.random.bits(k) + hlox.random.bits(k), raw)


def test_lax_shape_ops_on_key_arrays():
  ks = hlox.random.split(key(), 4)
  data = np.asarray(hlox.random.key_data(ks))
  one = lax.dynamic_slice(ks, (2,), (1,))
  np.testing.assert_array_equal(np.asarray(hlox.random.key_data(one)), data[2:3])
  np.testing.assert_array_equal(np.asarray(hlox.random.key_data(lax.squeeze(one, (0,)))),
                                data[2])
  np.testing.assert_array_equal(np.asarray(hlox.random.key_data(jnp.squeeze(one))), data[2])
  both = lax.concatenate([ks, one], 0)
  np.testing.assert_array_equal(np.asarray(hlox.random.key_data(both)),
                                np.concatenate([data, data[2:3]]))
  upd = lax.dynamic_update_slice(ks, one, (0,))
  np.testing.assert_array_equal(np.asarray(hlox.random.key_data(upd)),
                                np.concatenate([data[2:3], data[1:]]))
  assert _core.function_type_signature(
      lambda a, b: lax.dynamic_update_slice(a, b, (0,)), ks, one) == \
      KeyReuseSignature(Sink(1), Forward(0, 0))


def test_signatures_of_functions_traced_from_typed_key_structs():
  # make_jaxpr over ShapeDtypeStructs of a key dtype traces keys over their words, as for
  # concrete keys: random functions accept them and key-typed operations forward them.
  key = hlox.eval_shape(hlox.random.key, 0)
  key1d = hlox.eval_shape(lambda k: k[None], key)
  forward = KeyReuseSignature(Forward(0, 0))
  cases = [
      ((lambda k: k[None]), (key,), forward),
      (jnp.array, (key,), forward),
      ((lambda k: jnp.array(k, dtype=k.dtype)), (key,), forward),
      ((lambda k: k.reshape((1,))), (key,), forward),
      (jnp.squeeze, (key1d,), forward),
      (lax.dynamic_update_slice, (key1d, key1d, (0,)), KeyReuseSignature(Sink(1), Forward(0, 0))),
      (hlox.random.gamma, (key, 1.0), KeyReuseSignature(Sink(0))),
      (hlox.random.bits, (key,), KeyReuseSignature(Sink(0))),
  ]
  for fun, args, expected in cases:
    assert _core.function_type_signature(fun, *args) == expected
    assert _core.jaxpr_type_signature(hlox.make_jaxpr(fun)(*args)) == expected


def test_device_put_of_a_key_forwards_it():
  def f(key):
    assert_unconsumed(key)
    key_d = hlox.device_put(key)
    assert_unconsumed(key_d)
    consume(key)
    assert_consumed(key_d)
  _core.check_key_reuse(f, hlox.random.key(0))
  assert _core.function_type_signature(hlox.device_put, hlox.random.key(0)) == \
      KeyReuseSignature(Forward(0, 0))

"""``hlox.extend`` and ``hlox.interpreters.mlir``: a primitive defined outside hlox, with
JAX's conventions for each rule (as JAX's "primitives" tutorial writes them), through eager
evaluation, jit, grad, vmap and jvp; the primitive objects by JAX's names; the backend."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.extend import backend, core
from hlox.extend.mlir.dialects import stablehlo as hlo
from hlox.interpreters import ad, batching, mlir

multiply_add_p = core.Primitive("multiply_add")


def multiply_add(x, y, z):
  return multiply_add_p.bind(x, y, z)


multiply_add_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
multiply_add_p.def_abstract_eval(lambda x, y, z: core.ShapedArray(x.shape, x.dtype))
# JAX's convention: a lowering rule returns a list of values, one per result
mlir.register_lowering(multiply_add_p,
                       lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result],
                       platform="cpu")


def _jvp(primals, tangents):
  x, y, z = primals
  xt, yt, zt = (lax.full_like(x, 0) if type(t) is ad.Zero else t for t in tangents)
  return multiply_add(x, y, z), multiply_add(xt, y, multiply_add(x, yt, zt))


def _transpose(ct, x, y, z):
  # linear in one of x, y (the other is a known value), and in z
  if not ad.is_undefined_primal(x):
    return None, multiply_add(x, ct, lax.full_like(x, 0)), ct
  return multiply_add(ct, y, lax.full_like(y, 0)), None, ct


def _batch(args, dims):
  assert dims[0] == dims[1] == dims[2]
  return multiply_add(*args), dims[0]


ad.primitive_jvps[multiply_add_p] = _jvp
ad.primitive_transposes[multiply_add_p] = _transpose
batching.primitive_batchers[multiply_add_p] = _batch


def square_add(a, b):
  return multiply_add(a, a, b)


def test_a_primitive_defined_outside_hlox():
  assert float(square_add(2., 10.)) == 14.0  # the NumPy impl
  assert float(hlox.jit(square_add)(2., 10.)) == 14.0  # the StableHLO lowering
  assert float(hlox.grad(square_add)(2., 10.)) == 4.0  # jvp + transpose
  assert float(hlox.jit(hlox.grad(square_add))(2., 10.)) == 4.0
  a, b = np.array([2., 3.], np.float32), np.array([10., 20.], np.float32)
  np.testing.assert_array_equal(np.asarray(hlox.vmap(square_add)(a, b)), a * a + b)
  np.testing.assert_array_equal(np.asarray(hlox.jit(hlox.vmap(square_add))(a, b)), a * a + b)
  out, tangent = hlox.jvp(square_add, (2., 10.), (1., 1.))
  assert (float(out), float(tangent)) == (14.0, 5.0)
  assert "c:f32[] = multiply_add a a b" in str(hlox.make_jaxpr(square_add)(2., 10.))


def test_lower_fun_and_rule_results():
  twice_sin_p = core.Primitive("twice_sin")
  twice_sin_p.def_abstract_eval(lambda x: x)
  mlir.register_lowering(twice_sin_p, mlir.lower_fun(lambda x: 2 * jnp.sin(x),
                                                     multiple_results=False))
  np.testing.assert_allclose(float(hlox.jit(twice_sin_p.bind)(1.0)), 2 * np.sin(1.0),
                             rtol=1e-6)
  two_p = core.Primitive("two_results")
  two_p.multiple_results = True
  two_p.def_abstract_eval(lambda x: [x, x])
  mlir.register_lowering(two_p, lambda ctx, x: [x, hlo.NegOp(x).result])
  a, b = hlox.jit(lambda x: two_p.bind(x))(3.0)
  assert (float(a), float(b)) == (3.0, -3.0)
  bad_p = core.Primitive("bad_lowering")
  bad_p.def_abstract_eval(lambda x: x)
  mlir.register_lowering(bad_p, lambda ctx, x: [x, x])
  with pytest.raises(ValueError, match="lowering rule of bad_lowering returned 2 values"):
    hlox.jit(bad_p.bind)(1.0)


def test_primitives_by_jax_names_and_backend():
  eqns = hlox.make_jaxpr(lambda x: jnp.sin(x) + 1.0)(1.0).jaxpr.eqns
  assert [e.primitive for e in eqns] == [core.primitives.sin_p, core.primitives.add_p]
  checkpointed = hlox.make_jaxpr(hlox.checkpoint(jnp.sin))(1.0).jaxpr.eqns
  assert checkpointed[0].primitive is core.primitives.remat_p
  assert backend.get_backend().platform == "cpu"
  assert backend.get_default_device() == hlox.devices()[0]
  assert set(backend.backends()) == {"cpu"}
  with pytest.raises(RuntimeError, match="cpu"):
    backend.get_backend("tpu")


def test_prng_implementation_defined_outside_hlox():
  from hlox.extend import random as xrandom

  def split(data, shape):
    return jnp.broadcast_to(data + 1, (*shape, *data.shape)).astype(jnp.uint32)

  spec = xrandom.define_prng_impl(
      key_shape=(3,), seed=lambda s: jnp.full((3,), s, jnp.uint32) * 2, split=split,
      fold_in=lambda data, d: data + d, random_bits=lambda data, width, shape: jnp.full(
          shape, data[0], jnp.uint32), tag="toy")
  k = hlox.random.key(21, impl=spec)
  assert (k.shape, str(k.dtype)) == ((), "key<toy>")
  assert hlox.random.key_impl(k) == spec and repr(spec) == "PRNGSpec('<unnamed>')"
  np.testing.assert_array_equal(np.asarray(hlox.random.key_data(k)), [42, 42, 42])
  traced = hlox.jit(lambda s: hlox.random.key_data(hlox.random.key(s, impl=spec)))(5)
  np.testing.assert_array_equal(np.asarray(traced), [10, 10, 10])
  np.testing.assert_array_equal(
      np.asarray(hlox.random.key_data(hlox.random.split(k, 2))), [[43] * 3] * 2)
  np.testing.assert_array_equal(
      np.asarray(hlox.random.key_data(hlox.random.fold_in(k, 3))), [45, 45, 45])
  # a second implementation of the same (default) name is a different one
  other = xrandom.define_prng_impl(key_shape=(2,), seed=lambda s: jnp.zeros(2, jnp.uint32),
                                   split=split, fold_in=None, random_bits=None)
  assert hlox.random.key_data(hlox.random.key(21, impl=other)).shape == (2,)
  assert hlox.random.key_impl(hlox.random.key(0)) == "threefry2x32"
  wrapped = hlox.random.wrap_key_data(jnp.ones((4, 3), jnp.uint32),
                                      dtype=hlox.random.key_dtype(spec))
  assert wrapped.shape == (4,) and hlox.random.key_impl(wrapped) == spec


def test_rules_written_outside_hlox_get_tuples_as_in_jax():
  # JAX's interpreters hand rules tuples; rules written for JAX may concatenate them with
  # tuples or pass batch dimensions on as vmap axes.
  seen = []
  twice = core.Primitive("twice_for_tuples")
  twice.multiple_results = True
  twice.def_impl(lambda x, y: [2 * x, 2 * y])
  twice.def_abstract_eval(lambda x, y: [x, y])

  def jvp(primals, tangents):
    seen.append((type(primals), type(tangents)))
    tangents = tuple(ad.instantiate_zeros(t) for t in tangents)
    return twice.bind(*primals), twice.bind(*(tangents + ()))

  def batch(vals, dims):
    seen.append((type(vals), type(dims)))
    return twice.bind(*vals), dims

  ad.primitive_jvps[twice] = jvp
  batching.primitive_batchers[twice] = batch
  _, t = hlox.jvp(lambda x: twice.bind(x, x)[0], (1.0,), (1.0,))
  ys = hlox.vmap(lambda x: twice.bind(x, x))(hlox.numpy.ones(2))
  assert float(t) == 2.0 and np.asarray(ys[1]).tolist() == [2.0, 2.0]
  assert seen == [(tuple, tuple), (tuple, tuple)]


def test_register_lowering_returns_none():
  # JAX's register_lowering returns None (a notebook cell ending in it shows no value)
  p = core.Primitive("returns_nothing_test")
  p.def_abstract_eval(lambda x: x)
  assert mlir.register_lowering(p, lambda ctx, x: [x]) is None
  assert float(hlox.jit(p.bind)(np.float32(3.0))) == 3.0

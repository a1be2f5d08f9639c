"""hlox.flatten_util, hlox.dtypes, hlox.test_util, hlox.random's key names, hlox.tree.static
and hlox.nn's attention, scaled products and delta_orthogonal, against JAX and NumPy."""
import dataclasses
import importlib.util

import ml_dtypes
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import dtypes, flatten_util, nn, random, test_util
from hlox.config import enable_x64

from tests.util import check_against_jax_modules

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="jax (the test oracle) is not installed")


def test_exposed_on_the_package():
  for name in ("image", "flatten_util", "dtypes", "test_util"):
    assert hasattr(hlox, name)
  assert set(dtypes.__all__) >= {"bfloat16", "canonicalize_dtype", "extended", "finfo",
                                 "float0", "iinfo", "issubdtype", "prng_key", "result_type",
                                 "scalar_type_of", "itemsize_bits", "TypePromotionError"}


def test_ravel_pytree_mixed_dtypes():
  tree = {"a": np.arange(3, dtype=np.int32), "b": (np.ones((2, 2), np.float16), 2.5),
          "c": np.array(True)}
  flat, unravel = flatten_util.ravel_pytree(tree)
  assert flat.dtype == np.float32
  np.testing.assert_array_equal(np.asarray(flat), [0, 1, 2, 1, 1, 1, 1, 2.5, 1])
  back = unravel(flat)
  assert hlox.tree_util.tree_structure(back) == hlox.tree_util.tree_structure(tree)
  assert back["a"].dtype == np.int32 and back["b"][0].dtype == np.float16
  assert back["c"].dtype == np.bool_
  np.testing.assert_array_equal(np.asarray(back["a"]), tree["a"])
  with pytest.raises(TypeError, match="dtype"):
    unravel(flat.astype(np.int32))
  with pytest.raises(ValueError, match="length"):
    unravel(jnp.ones(3, np.float32))
  empty, unravel_empty = flatten_util.ravel_pytree({})
  assert empty.shape == (0,) and empty.dtype == np.float32 and unravel_empty(empty) == {}
  # One dtype in: unravel keeps the vector's dtype; jit and grad go through.
  flat32, unravel32 = flatten_util.ravel_pytree([np.ones(2, np.float32), np.zeros(3, np.float32)])
  assert unravel32(flat32.astype(np.int32))[0].dtype == np.int32
  g = hlox.grad(lambda v: jnp.sum(unravel32(v)[0] * 3.0) + jnp.sum(unravel32(v)[1]))(flat32)
  np.testing.assert_array_equal(np.asarray(g), [3, 3, 1, 1, 1])
  np.testing.assert_array_equal(np.asarray(hlox.jit(lambda t: flatten_util.ravel_pytree(t)[0])(
      tree)), np.asarray(flat))


def test_ravel_pytree_unravel_is_a_stable_static_argument():
  tree = (np.arange(2, dtype=np.int32), np.ones(2, np.int32))
  (flat1, unravel1), (flat2, unravel2) = flatten_util.ravel_pytree(tree), \
      flatten_util.ravel_pytree(tree)
  assert unravel1 == unravel2 and hash(unravel1) == hash(unravel2)
  traces = []
  run = hlox.jit(lambda flat, unravel: traces.append(1) or unravel(flat + 1), static_argnums=1)
  run(flat1, unravel1)
  out = run(flat2, unravel2)
  assert len(traces) == 1
  np.testing.assert_array_equal(np.asarray(out[1]), [2, 2])


def test_dtypes_namespace():
  assert dtypes.canonicalize_dtype(np.float64) == np.float32
  with enable_x64():
    assert dtypes.canonicalize_dtype(np.float64) == np.float64
  assert dtypes.result_type(np.int8, 2.0, return_weak_type_flag=True) == (np.float32, True)
  assert dtypes.issubdtype(dtypes.bfloat16, np.floating)
  assert dtypes.itemsize_bits(np.int8) == 8 and dtypes.itemsize_bits(jnp.int4) == 4
  assert dtypes.itemsize_bits(np.bool_) == 8
  assert dtypes.scalar_type_of(1.0) is float and dtypes.scalar_type_of(jnp.ones(2)) is float
  assert dtypes.scalar_type_of(np.int32(1)) is int and dtypes.scalar_type_of(True) is bool
  assert dtypes.finfo(dtypes.bfloat16).bits == 16 and dtypes.iinfo(np.int8).max == 127
  k = random.key(0)
  assert dtypes.issubdtype(k.dtype, dtypes.prng_key)
  assert dtypes.issubdtype(k.dtype, dtypes.extended)
  assert not dtypes.issubdtype(k.dtype, np.floating)
  assert not dtypes.issubdtype(np.float32, dtypes.extended)
  assert k.dtype == "key<fry>" and str(k.dtype) == "key<fry>"
  assert dtypes.canonicalize_dtype(k.dtype, allow_extended_dtype=True) is k.dtype
  with pytest.raises(ValueError, match="extended"):
    dtypes.canonicalize_dtype(k.dtype)
  with pytest.raises(ValueError):
    dtypes.result_type()


def test_random_key_names_and_tree_static():
  k = random.key(3)
  assert random.key_dtype() == k.dtype and random.key_impl(k) == "threefry2x32"
  assert random.key_impl(random.PRNGKey(0)) == "threefry2x32"
  with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
    random.key_dtype("bogus_impl")
  with pytest.raises(TypeError):
    random.key_impl(np.ones(3, np.float32))

  @hlox.tree_util.register_dataclass
  @dataclasses.dataclass
  class Op:
    x: object
    op: str = hlox.tree.static(default="add")

  m = Op(jnp.ones(2))
  assert dataclasses.fields(Op)[1].metadata["static"] is True
  leaves, treedef = hlox.tree.flatten(m)
  assert len(leaves) == 1 and hlox.tree.unflatten(treedef, leaves).op == "add"


def test_test_util_checks():
  with enable_x64():
    test_util.check_grads(lambda x, y: jnp.sin(x) * y ** 2, (np.array([0.3, 1.2]), 2.0), 2,
                          modes=("fwd", "rev", "lin"))
    import functools
    test_util.check_jvp(jnp.tanh, functools.partial(hlox.jvp, jnp.tanh), (np.array([0.5]),))
    test_util.check_vjp(jnp.exp, functools.partial(hlox.vjp, jnp.exp), (np.array([0.5]),))
    wrong = lambda primals, tangents: (jnp.sin(primals[0]), 2 * jnp.cos(primals[0]) * tangents[0])
    with pytest.raises(AssertionError):
      test_util.check_jvp(jnp.sin, wrong, (np.array([0.5, 1.0]),))
  with pytest.raises(ValueError, match="modes"):
    test_util.check_grads(jnp.sin, (1.0,), 1, modes=("sideways",))


# --- nn ------------------------------------------------------------------------------------

_QKV = ("rng = np.random.default_rng(0); "
        "q = rng.standard_normal((2, 5, 4, 8)).astype(np.float32); "
        "k = rng.standard_normal((2, 6, 2, 8)).astype(np.float32); "
        "v = rng.standard_normal((2, 6, 2, 8)).astype(np.float32); ")
ORACLE = {
    "plain": ("nn", _QKV + "return m.dot_product_attention(q, k, v)"),
    "bias_mask_causal": ("nn", _QKV + "b = rng.standard_normal((1, 4, 5, 6)).astype("
                         "np.float32); mk = rng.random((2, 1, 5, 6)) < 0.7; return "
                         "m.dot_product_attention(q, k, v, b, mk, is_causal=True)"),
    "lengths_window": ("nn", _QKV + "return m.dot_product_attention(q, k, v, "
                       "query_seq_lengths=np.array([3, 5], np.int32), key_value_seq_lengths="
                       "np.array([4, 2], np.int32), local_window_size=1, implementation='xla')"),
    "residual_3d": ("nn", _QKV + "return m.dot_product_attention(q[0], k[0], v[0], scale=0.2, "
                    "return_residual=True)"),
    "delta_orthogonal": ("nn.initializers", "return m.delta_orthogonal()("
                         "np.array([0, 7], np.uint32), (3, 3, 4, 5))"),
}


@needs_jax
@pytest.mark.jax_oracle
@pytest.mark.slow  # one JAX subprocess compiling every program: 30-45 s
def test_matches_jax():
  check_against_jax_modules(ORACLE, rtol=1e-5, atol=1e-6)


def _attention_reference(q, k, v, scale):
  # Multi-head attention with the key/value heads repeated over their query groups.
  G = q.shape[2] // k.shape[2]
  k, v = np.repeat(k, G, axis=2), np.repeat(v, G, axis=2)
  logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
  p = np.exp(logits - logits.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  return np.einsum("bnts,bsnh->btnh", p, v)


def test_attention_numpy_jit_vmap_grad_and_errors():
  rng = np.random.default_rng(1)
  q = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
  k = rng.standard_normal((2, 5, 2, 8)).astype(np.float32)
  v = rng.standard_normal((2, 5, 2, 8)).astype(np.float32)
  want = _attention_reference(q, k, v, 1 / np.sqrt(8))
  np.testing.assert_allclose(np.asarray(nn.dot_product_attention(q, k, v)), want, rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.jit(nn.dot_product_attention)(q, k, v)), want,
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(nn.dot_product_attention)(q, k, v)), want,
                             rtol=1e-5, atol=1e-6)
  with enable_x64():
    test_util.check_grads(lambda q, k: nn.dot_product_attention(q, k, v[:1].astype(np.float64)),
                          (q[:1, :2].astype(np.float64), k[:1].astype(np.float64)), 1,
                          modes=("rev",), atol=1e-2, rtol=1e-2)  # softmax runs in float32
  with pytest.raises(ValueError, match="multiple"):
    nn.dot_product_attention(q[:, :, :3], k, v)
  with pytest.raises(ValueError, match="mask dtype"):
    nn.dot_product_attention(q, k, v, mask=np.ones((1, 1, 3, 5), np.float32))
  with pytest.raises(ValueError, match="implementation"):
    nn.dot_product_attention(q, k, v, implementation="flash")


def test_one_hot_inputs_and_errors():
  np.testing.assert_array_equal(np.asarray(nn.one_hot([0, 2], 3)), np.eye(3)[[0, 2]])  # lists
  with pytest.raises(hlox.errors.ConcretizationTypeError,
                     match="in jax.nn.one_hot argument `num_classes`"):
    hlox.jit(nn.one_hot)(np.arange(2), 3)
  with pytest.warns(DeprecationWarning, match="one_hot input should be integer-typed"):
    out = nn.one_hot(np.array([1.0]), 3)
  np.testing.assert_array_equal(np.asarray(out), [[0, 1, 0]])


def test_attention_bias_gradient_under_jit_with_a_bool_mask():
  # The mask's cotangent is float0: a jitted vjp returns it (it travels as bools).
  rng = np.random.default_rng(3)
  x = rng.standard_normal((1, 4, 2, 8)).astype(np.float32)
  bias = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
  mask = np.ones((1, 1, 4), bool)
  attn = lambda x, b, m: nn.dot_product_attention(x, x, x, bias=b, mask=m)  # noqa: E731
  bwd = hlox.jit(lambda x, b, m: hlox.vjp(attn, x, b, m)[1](x))
  _, dbias, dmask = bwd(x, bias, mask)
  assert dmask.dtype == dtypes.float0 and dmask.shape == mask.shape
  np.testing.assert_allclose(np.asarray(dbias), np.asarray(hlox.vjp(attn, x, bias, mask)[1](x)[1]),
                             rtol=1e-5, atol=1e-6)
  assert np.asarray(dbias).std() > 0


def test_scaled_matmul_and_dot_general():
  rng = np.random.default_rng(2)
  a = rng.standard_normal((2, 3, 64)).astype(np.float32)
  b = rng.standard_normal((2, 4, 64)).astype(np.float32)
  sa = rng.random((2, 3, 2)).astype(np.float32)
  sb = rng.random((2, 4, 2)).astype(np.float32)
  want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 32, -1), b * np.repeat(sb, 32, -1))
  np.testing.assert_allclose(np.asarray(nn.scaled_matmul(a, b, sa, sb)), want, rtol=1e-5,
                             atol=1e-5)
  with pytest.raises(ValueError, match="3-dimensional"):
    nn.scaled_matmul(a[0], b, sa, sb)
  dn = (((2,), (2,)), ((0,), (0,)))
  np.testing.assert_allclose(np.asarray(nn.scaled_dot_general(a, b, dn)),
                             np.einsum("bmk,bnk->bmn", a, b), rtol=1e-5, atol=1e-5)
  cfg = nn.get_scaled_dot_general_config("mxfp8")
  assert (cfg.block_size, cfg.data_type) == (32, np.dtype(ml_dtypes.float8_e4m3fn))
  assert nn.get_scaled_dot_general_config("nvfp4").block_size == 16
  with pytest.raises(ValueError, match="mode"):
    nn.get_scaled_dot_general_config("int8")

  def quantize(x):  # MXFP8 in NumPy: power-of-two scales (rounded up), float8_e4m3fn data
    blocks = x.reshape(x.shape[:-1] + (-1, 32))
    s = np.abs(blocks).max(-1, keepdims=True) / 448.0
    s = 2.0 ** np.ceil(np.log2(np.abs(blocks).max(-1, keepdims=True) / 448.0))
    q = np.clip(blocks / s, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return (q * s).reshape(x.shape)
  got = nn.scaled_dot_general(a, b, dn, configs=[cfg] * 3)
  np.testing.assert_allclose(np.asarray(got), np.einsum("bmk,bnk->bmn", quantize(a), quantize(b)),
                             rtol=1e-5, atol=1e-4)
  # The straight-through gradient: quantized products of the cotangent.
  a2 = rng.standard_normal((32, 64)).astype(np.float32)
  b2 = rng.standard_normal((32, 64)).astype(np.float32)
  dn2 = (((1,), (1,)), ((), ()))
  g = hlox.grad(lambda a: jnp.sum(nn.scaled_dot_general(a, b2, dn2, configs=[cfg] * 3)))(a2)
  np.testing.assert_allclose(np.asarray(g), np.ones((32, 32)) @ b2, rtol=0.1, atol=0.5)


def test_delta_orthogonal_and_initializer_protocol():
  init = nn.initializers.delta_orthogonal(scale=2.0)
  w = np.array(init(random.key(1), (3, 5, 4, 6)))
  centre = w[1, 2]
  np.testing.assert_allclose(centre @ centre.T, 4 * np.eye(4), atol=1e-5)
  w[1, 2] = 0
  assert not w.any()
  with pytest.raises(ValueError, match="3D, 4D or 5D"):
    init(random.key(1), (4, 6))
  with pytest.raises(ValueError, match="fan_in"):
    init(random.key(1), (3, 6, 4))
  assert isinstance(nn.initializers.Initializer, type)

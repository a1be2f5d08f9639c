"""JAX's top-level names in hlox: the option scopes (rank and dtype promotion, matmul
precision, transfer guards, no_tracing/no_execution, ...) and the functions user code calls
(typeof, custom_gradient, closure_convert, live_arrays, make_array_from_*, tokens, ...)."""
import logging
import sys

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax

config_module = sys.modules["hlox.config"]  # ``hlox.config`` is the Config object


# --- numpy_rank_promotion ------------------------------------------------------------------

def test_rank_promotion_allow_warn_raise():
  x, y = jnp.arange(3.0), jnp.ones((2, 3))
  np.testing.assert_allclose(x + y, np.arange(3.0) + np.ones((2, 3)))
  with hlox.numpy_rank_promotion("warn"):
    with pytest.warns(UserWarning, match=r"Following NumPy automatic rank promotion for "
                                         r"multiply on shapes \(3,\) \(2, 3\)"):
      out = jnp.multiply(x, y)
  np.testing.assert_allclose(out, np.arange(3.0) * np.ones((2, 3)))
  with hlox.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError, match=r"Operands could not be broadcast together for add "
                                         r"on shapes \(3,\) \(2, 3\) and with the config "
                                         r"option jax_numpy_rank_promotion='raise'"):
      x + y
    # Equal ranks and scalars are no rank promotion.
    np.testing.assert_allclose(y * y + 1.0, 2.0 * np.ones((2, 3)))
    assert hlox.numpy_rank_promotion.value == "raise"
  assert hlox.numpy_rank_promotion.value == "allow"


def test_rank_promotion_reaches_jit_traced_before():
  f = hlox.jit(lambda a, b: a - b)
  x, y = jnp.arange(3.0), jnp.ones((2, 3))
  np.testing.assert_allclose(f(x, y), np.arange(3.0) - 1.0 + np.zeros((2, 3)))
  with hlox.numpy_rank_promotion("raise"):  # the option keys the caches: f traces again
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
      f(x, y)
  assert f(x, y).shape == (2, 3)


# --- numpy_dtype_promotion -----------------------------------------------------------------

def test_strict_dtype_promotion():
  x, i = jnp.ones(3, "float32"), jnp.arange(3, dtype="int32")
  assert (x + i).dtype == np.float32  # standard: int32 and float32 meet at float32
  with hlox.numpy_dtype_promotion("strict"):
    assert hlox.numpy_dtype_promotion.value == "strict"
    with pytest.raises(hlox.dtypes.TypePromotionError,
                       match=r"Input dtypes \('float32', 'int32'\)|Input dtypes "
                             r"\('int32', 'float32'\).*jax_numpy_dtype_promotion=strict"):
      x + i
    with pytest.raises(hlox.dtypes.TypePromotionError, match="no available implicit dtype"):
      i * 1.5  # a weak float does not join a strong int
    with pytest.raises(hlox.dtypes.TypePromotionError):
      jnp.ones(2, "float16") + jnp.ones(2, "float32")
    # Weakly typed Python scalars of a lower or equal kind still promote.
    assert (x + 1).dtype == np.float32 and (x * 2.5).dtype == np.float32
    assert (i + 2).dtype == np.int32
    np.testing.assert_allclose(x * 2.5, 2.5 * np.ones(3))
  assert hlox.numpy_dtype_promotion.value == "standard"
  assert (x + i).dtype == np.float32


# --- default_matmul_precision --------------------------------------------------------------

def test_default_matmul_precision_recorded_in_jaxpr():
  a = jnp.arange(4.0).reshape(2, 2)
  matmul = lambda p, q: p @ q  # noqa: E731
  assert "precision" not in str(hlox.make_jaxpr(matmul)(a, a))
  with hlox.default_matmul_precision("float32"):
    text = str(hlox.make_jaxpr(matmul)(a, a))
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in text
    explicit = str(hlox.make_jaxpr(lambda p, q: lax.dot(p, q, precision="bfloat16"))(a, a))
    assert "precision=(Precision.DEFAULT, Precision.DEFAULT)" in explicit
    np.testing.assert_allclose(matmul(a, a), np.arange(4.0).reshape(2, 2) @
                               np.arange(4.0).reshape(2, 2))
  with hlox.default_matmul_precision("BF16_BF16_F32"):
    assert "precision=BF16_BF16_F32" in str(hlox.make_jaxpr(matmul)(a, a))
  assert hlox.default_matmul_precision.value is None


# --- transfer guards -----------------------------------------------------------------------

def test_transfer_guard_host_to_device():
  f = hlox.jit(lambda x: x * 2.0)
  host = np.ones(3, np.float32)
  np.testing.assert_allclose(f(host), 2.0 * host)  # allowed, and now cached
  with hlox.transfer_guard("disallow"):
    with pytest.raises(RuntimeError, match="Disallowed host-to-device transfer"):
      f(host)  # an implicit transfer, even on the cache-hit path
    with pytest.raises(RuntimeError, match="Disallowed host-to-device transfer"):
      jnp.ones(3) + host
    explicit = hlox.device_put(host)  # explicit transfers pass 'disallow'
    np.testing.assert_allclose(f(explicit), 2.0 * host)
  with hlox.transfer_guard_host_to_device("disallow_explicit"):
    with pytest.raises(RuntimeError, match="Disallowed host-to-device transfer"):
      hlox.device_put(host)
  np.testing.assert_allclose(f(host), 2.0 * host)


def test_transfer_guard_log_and_scopes(caplog):
  with caplog.at_level(logging.WARNING, logger="hlox.transfer_guard"):
    with hlox.transfer_guard_host_to_device("log"):
      jnp.asarray(np.arange(2.0)) + 0
  assert any("host-to-device transfer" in r.getMessage() for r in caplog.records)
  with hlox.transfer_guard_device_to_host("log"):
    with hlox.transfer_guard("disallow"):
      assert hlox.transfer_guard_device_to_host.value == "disallow"
      assert hlox.transfer_guard_device_to_device.value == "disallow"
    assert hlox.transfer_guard_device_to_host.value == "log"
    assert hlox.transfer_guard_host_to_device.value is None
  try:
    hlox.config.update("jax_transfer_guard", "log")  # set-only: sets every direction
    assert {hlox.transfer_guard_host_to_device.value, hlox.transfer_guard_device_to_host.value,
            hlox.transfer_guard_device_to_device.value} == {"log"}
  finally:
    hlox.config.update("jax_transfer_guard", None)
  assert hlox.transfer_guard_host_to_device.value is None


# --- the other option scopes, bad values ---------------------------------------------------

def test_enable_x64_scope_decorator_and_config_class():
  assert not hlox.enable_x64.value
  with hlox.enable_x64(True):
    assert jnp.ones(2, "float64").dtype == np.float64
  with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):
    assert jnp.ones(2, "float64").dtype == np.float32

  @hlox.enable_x64(True)
  def wide():
    return jnp.arange(3.0).dtype
  assert wide() == np.float64 and not hlox.enable_x64.value
  from hlox.config import enable_x64  # tests use it as ``with enable_x64():``
  with enable_x64():
    assert hlox.enable_x64.value
    with enable_x64(False):
      assert jnp.arange(2.0).dtype == np.float32
  assert not hlox.config.enable_x64


@pytest.mark.parametrize("name,value", [
    ("enable_checks", True), ("explain_cache_misses", True), ("debug_key_reuse", True),
    ("softmax_custom_jvp", True), ("enable_custom_prng", True),
    ("allow_f16_reductions", False), ("legacy_prng_key", "error"),
])
def test_option_scopes_set_and_restore(name, value):
  option = getattr(hlox, name)
  before = option.value
  with option(value):
    assert option.value == value and getattr(hlox.config, name) == value
  assert option.value == before

  @option(value)
  def read():
    return option.value
  assert read() == value and option.value == before


def test_bad_option_values_raise_with_allowed_values():
  with pytest.raises(ValueError, match=r"new enum value must be in \['allow', 'warn', "
                                       r"'raise'\], got bad"):
    hlox.numpy_rank_promotion("bad")
  with pytest.raises(ValueError, match="is not a valid NumpyDtypePromotion"):
    hlox.numpy_dtype_promotion("loose")
  with pytest.raises(ValueError, match=r"new enum value must be None or in \['default'"):
    hlox.default_matmul_precision("float31")
  with pytest.raises(ValueError, match=r"must be None or in \['allow', 'log', 'disallow'"):
    hlox.transfer_guard("forbid")
  with pytest.raises(ValueError, match="is not a valid LegacyPrngKeyState"):
    hlox.legacy_prng_key("sometimes")
  with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such_option"):
    hlox.config.update("jax_no_such_option", 1)
  with pytest.raises(ValueError, match="new enum value must be in"):
    hlox.config.update("jax_numpy_rank_promotion", "loud")
  with pytest.raises(TypeError, match="requires an argument"):
    hlox.numpy_rank_promotion()
  with pytest.raises(ValueError, match="default_device must be passed either a Device"):
    hlox.default_device("abacus")
  assert hlox.numpy_rank_promotion.value == "allow"


def test_allow_f16_reductions_and_legacy_prng_key():
  half = jnp.ones(3, "float16")
  with hlox.allow_f16_reductions(False):
    with pytest.raises(ValueError, match=r"reduce_sum on operand f16\[3\] is not allowed when "
                                         r"jax_allow_f16_reductions=False"):
      lax.reduce_sum(half, (0,))
    assert lax.reduce_sum(jnp.ones((1, 2), "float16"), (0,)).shape == (2,)  # size-1 axis
  assert float(lax.reduce_sum(half, (0,))) == 3.0
  raw = hlox.random.PRNGKey(0)
  expected = np.asarray(hlox.random.normal(raw, (2,)))
  with hlox.legacy_prng_key("error"):
    with pytest.raises(ValueError, match="normal: Legacy uint32 key array passed as key"):
      hlox.random.normal(raw, (2,))
    hlox.random.normal(hlox.random.key(0), (2,))  # typed keys are fine
  with hlox.legacy_prng_key("warn"):
    with pytest.warns(UserWarning, match="Legacy uint32 key array"):
      np.testing.assert_array_equal(hlox.random.normal(raw, (2,)), expected)


def test_default_device_option_holds_a_device():
  device = hlox.devices()[0]
  with hlox.default_device(device):
    assert hlox.default_device.value is device
  with hlox.default_device("cpu"):
    assert hlox.default_device.value == "cpu"
  assert hlox.default_device.value is None


def test_no_tracing_and_no_execution():
  f = hlox.jit(lambda x: x + 1.0)
  x = jnp.arange(3.0)
  np.testing.assert_allclose(f(x), np.arange(3.0) + 1)
  with hlox.no_tracing(True):
    np.testing.assert_allclose(f(x), np.arange(3.0) + 1)  # cached: no tracing
    with pytest.raises(RuntimeError, match="re-tracing function <lambda> for `jit`, but "
                                           "'no_tracing' is set"):
      f(jnp.arange(4.0))
  with hlox.no_execution(True):
    with pytest.raises(RuntimeError, match="but the no_execution config option is set"):
      f(x)
    with pytest.raises(RuntimeError, match="no_execution"):
      x * x
    assert f.lower(x).compile() is not None  # compiling is allowed
  np.testing.assert_allclose(f(x), np.arange(3.0) + 1)


# --- functions -----------------------------------------------------------------------------

def test_live_arrays_sees_new_and_not_deleted():
  x = jnp.arange(5.0) * 3.0
  assert any(a is x for a in hlox.live_arrays())
  assert any(a is x for a in hlox.live_arrays("cpu"))
  x.delete()
  assert not any(a is x for a in hlox.live_arrays())
  assert all(not a.is_deleted() for a in hlox.live_arrays())


def test_print_environment_info(capsys):
  text = hlox.print_environment_info(return_string=True)
  assert f"hlox:    {hlox.version.hlox_version} (JAX {hlox.__version__} API)" in text and "jaxlib:" in text
  assert f"numpy:   {np.__version__}" in text and "device info: cpu-" in text
  assert hlox.print_environment_info() is None
  assert capsys.readouterr().out == text


def test_typeof():
  t = hlox.typeof(jnp.ones((2, 3), "int32"))
  assert (t.shape, t.dtype, t.weak_type) == ((2, 3), np.int32, False)
  w = hlox.typeof(1.5)
  assert (w.shape, w.dtype, w.weak_type) == ((), np.float32, True)
  seen = []
  hlox.jit(lambda v: seen.append(hlox.typeof(v)) or v)(np.zeros(4, np.float32))
  assert seen[0].shape == (4,) and seen[0].dtype == np.float32
  # printed as JAX prints a type; jaxprs keep the short names
  assert (str(t), str(w), repr(w)) == ("int32[2,3]", "~float32[]",
                                       "ShapedArray(float32[], weak_type=True)")
  assert "a:f32[4]" in str(hlox.make_jaxpr(lambda v: v * 2)(np.zeros(4, np.float32)))
  with pytest.raises(TypeError, match="typeof: Value 'abc'"):
    hlox.typeof("abc")
  # typed keys: their key dtype, eagerly and under jit; raw uint32 keys are plain arrays
  keys = hlox.random.split(hlox.random.key(0), 3)
  key_types = [hlox.typeof(keys)]
  hlox.jit(lambda k: key_types.append(hlox.typeof(k[0])) or k)(keys)
  assert [str(t) for t in key_types] == ["key<fry>[3]", "key<fry>[]"]
  assert key_types[0].shape == (3,) and key_types[0].dtype == keys.dtype
  assert str(hlox.typeof(hlox.random.PRNGKey(0))) == "uint32[2]"


def test_custom_gradient_uses_the_rule():
  @hlox.custom_gradient
  def f(x):
    return x ** 2, lambda g: (g * x,)  # deliberately not 2x: the rule must be what is used
  assert float(f(3.0)) == 9.0
  assert float(hlox.grad(f)(3.0)) == 3.0
  assert float(hlox.jit(hlox.grad(f))(4.0)) == 4.0

  @hlox.custom_gradient
  def g(x, y):
    return x * y, lambda ct: (ct * y, ct * x)
  gx, gy = hlox.grad(g, argnums=(0, 1))(3.0, 4.0)
  assert (float(gx), float(gy)) == (4.0, 3.0)

  @hlox.custom_gradient
  def clipped_exp(x):  # the rule closes over an intermediate of the forward pass
    e = jnp.exp(x)
    return e, lambda ct: jnp.minimum(ct * e, 1.0)
  xs = jnp.array([-1.0, 0.5, 2.0])
  np.testing.assert_allclose(hlox.vmap(hlox.grad(clipped_exp))(xs),
                             np.minimum(np.exp([-1.0, 0.5, 2.0]), 1.0), rtol=1e-6)


def test_closure_convert_hoists_traced_values():
  record = {}

  def outer(y):
    inner = lambda x: jnp.sin(x) * y  # noqa: E731  (closes over the traced y)
    converted, hoisted = hlox.closure_convert(inner, 1.0)
    record["hoisted"] = len(hoisted)
    return converted(2.0, *hoisted)

  np.testing.assert_allclose(outer(3.0), np.sin(2.0) * 3.0, rtol=1e-6)
  assert record["hoisted"] == 0  # eagerly y is concrete: nothing to hoist
  np.testing.assert_allclose(hlox.grad(outer)(3.0), np.sin(2.0), rtol=1e-6)
  assert record["hoisted"] == 1
  np.testing.assert_allclose(hlox.jit(outer)(0.5), np.sin(2.0) * 0.5, rtol=1e-6)
  converted, hoisted = hlox.closure_convert(lambda a, b: a * b + 1.0, 2.0, 3.0)
  assert hoisted == [] and float(converted(4.0, 5.0)) == 21.0
  with pytest.raises(TypeError, match="same Pytree structure"):
    converted((4.0, 5.0))


def test_process_aliases_version_and_device():
  with pytest.warns(UserWarning, match="renamed to hlox.process_count"):
    assert hlox.host_count() == hlox.process_count()
  with pytest.warns(UserWarning, match="renamed to hlox.process_index"):
    assert hlox.host_id() == hlox.process_index()
  with pytest.warns(UserWarning, match="renamed to hlox.process_indices"):
    assert hlox.host_ids() == list(range(hlox.process_count()))
  assert hlox.process_indices() == list(range(hlox.process_count()))
  assert hlox.__version__ == hlox.version.__version__
  assert hlox.__version_info__ == tuple(int(p) for p in hlox.__version__.split("."))
  assert isinstance(hlox.devices()[0], hlox.Device)
  assert not isinstance("cpu", hlox.Device)


def test_make_array_from_pieces():
  data = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  sharding = jnp.ones(1).sharding
  seen = []
  a = hlox.make_array_from_callback((2, 3), sharding, lambda idx: seen.append(idx) or data[idx])
  np.testing.assert_array_equal(a, data)
  assert seen == [(slice(None), slice(None))] and a.devices() == {hlox.devices()[0]}
  with pytest.raises(ValueError, match=r"make_array_from_callback: Expected shard shape "
                                       r"\(2, 3\)"):
    hlox.make_array_from_callback((2, 3), sharding, lambda idx: np.ones(4))
  piece = jnp.asarray(data)
  b = hlox.make_array_from_single_device_arrays((2, 3), sharding, [piece])
  np.testing.assert_array_equal(b, data)
  with pytest.raises(ValueError, match="Expected shard shape"):
    hlox.make_array_from_single_device_arrays((3, 2), sharding, [piece])
  c = hlox.make_array_from_process_local_data(sharding, data)
  np.testing.assert_array_equal(c, data)
  with pytest.raises(TypeError, match="make_array_from_callback: sharding should be"):
    hlox.make_array_from_callback((2,), "x", lambda idx: np.ones(2))


def test_tokens():
  t = lax.create_token()
  assert repr(lax.after_all(t, lax.create_token())) == "Token()"
  text = str(hlox.make_jaxpr(lambda x: lax.after_all(lax.create_token(x)))(1.0))
  assert "Tok = create_token" in text and "Tok = after_all" in text

  def f(x):
    lax.after_all(lax.create_token())
    return x * 2.0
  assert "stablehlo.after_all" in hlox.jit(f).lower(1.0).as_text()
  assert float(hlox.jit(f)(1.5)) == 3.0
  np.testing.assert_allclose(hlox.vmap(hlox.grad(f))(jnp.ones(2)), [2.0, 2.0])
  with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
    lax.after_all(1.0)
  assert repr(hlox.jit(lambda x: lax.create_token(x))(1.0)) == "Token()"  # as JAX


# --- against JAX ---------------------------------------------------------------------------

# The names of dir(jax) that other work adds (sharding and mesh, Ref) or that are JAX's
# private or internal modules; every other name of dir(jax) must be in dir(hlox).
_OTHERS = {"NamedSharding", "P", "make_mesh", "shard_map", "set_mesh", "reshard", "sharding",
           "Shard", "smap", "Ref", "new_ref", "empty_ref", "freeze", "free_ref", "ref"}
_THIS_ISSUE = {
    "enable_x64", "enable_checks", "explain_cache_misses", "default_matmul_precision",
    "numpy_dtype_promotion", "numpy_rank_promotion", "debug_key_reuse", "transfer_guard",
    "transfer_guard_host_to_device", "transfer_guard_device_to_host",
    "transfer_guard_device_to_device", "default_device", "live_arrays",
    "print_environment_info", "typeof", "custom_gradient", "closure_convert", "host_count",
    "host_id", "host_ids", "process_indices", "version", "softmax_custom_jvp",
    "legacy_prng_key", "enable_custom_prng", "allow_f16_reductions", "no_tracing",
    "no_execution", "make_array_from_callback", "make_array_from_single_device_arrays",
    "make_array_from_process_local_data", "Device", "__version_info__"}

_ORACLE = r"""
import json, sys
import numpy as np
import jax, jax.numpy as jnp
result = {"missing_names": sorted(set(json.loads(sys.stdin.read())) - set(dir(jax)))}
def message(fn):
  try:
    fn()
  except Exception as e:
    return [type(e).__name__, str(e)]
  return None
x, y = jnp.ones(3), jnp.ones((2, 3))
with jax.numpy_rank_promotion("raise"):
  result["rank"] = message(lambda: x + y)
with jax.numpy_dtype_promotion("strict"):
  result["strict"] = message(lambda: jnp.ones(3, "float32") + jnp.ones(3, "int32"))
result["bad_enum"] = message(lambda: jax.numpy_rank_promotion("bad"))
with jax.transfer_guard("disallow"):
  result["guard"] = message(lambda: jax.jit(lambda v: v)(np.ones(2, np.float32)))
print(json.dumps(result))
"""


@pytest.mark.slow  # ~4 s, mostly JAX's start-up; the tests above pin the same phrases
@pytest.mark.jax_oracle
def test_names_and_messages_match_jax():
  pytest.importorskip("jax")
  from tests.util import run_in_jax
  expected = run_in_jax(_ORACLE, sorted(_THIS_ISSUE))
  assert expected["missing_names"] == []  # every name checked here is one of JAX's
  assert sorted(_THIS_ISSUE - set(dir(hlox))) == []
  assert not _THIS_ISSUE & _OTHERS
  x, y = jnp.ones(3), jnp.ones((2, 3))
  with hlox.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError) as rank:
      x + y
  with hlox.numpy_dtype_promotion("strict"):
    with pytest.raises(hlox.dtypes.TypePromotionError) as strict:
      jnp.ones(3, "float32") + jnp.ones(3, "int32")
  with pytest.raises(ValueError) as bad:
    hlox.numpy_rank_promotion("bad")
  with hlox.transfer_guard("disallow"):
    with pytest.raises(RuntimeError) as guard:
      hlox.jit(lambda v: v)(np.ones(2, np.float32))
  ours = {"rank": rank.value, "strict": strict.value, "bad_enum": bad.value,
          "guard": guard.value}
  key_phrases = {"rank": "and with the config option jax_numpy_rank_promotion='raise'",
                 "strict": "have no available implicit dtype promotion path when "
                           "jax_numpy_dtype_promotion=strict",
                 "bad_enum": "new enum value must be in ['allow', 'warn', 'raise'], got bad",
                 "guard": "Disallowed host-to-device transfer: aval=ShapedArray(float32[2])"}
  for key, phrase in key_phrases.items():
    jax_class, jax_text = expected[key]
    assert phrase in jax_text, (key, jax_text)  # the phrase is JAX's
    assert phrase in str(ours[key]), (key, str(ours[key]))
    assert type(ours[key]).__name__ == jax_class, key


def test_options_police_user_code_not_hlox_internals():
  # JAX's own functions never rely on implicit rank or dtype promotion; hlox's may, and
  # must not fail because the user asked for 'raise' / 'strict' in their own code.
  a, b = jnp.ones((2, 3)), jnp.ones(3)
  with hlox.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
      a * b
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
      hlox.jit(lambda x, y: x + y)(a, b)
    np.testing.assert_array_equal(np.asarray(jnp.vander(jnp.arange(3.0), 2)),
                                  np.vander(np.arange(3.0), 2))
    np.testing.assert_array_equal(
        np.asarray(jnp.searchsorted(jnp.arange(5.0), jnp.array([[1.5], [3.0]]))), [[2], [3]])
    np.testing.assert_allclose(np.asarray(jnp.cov(jnp.arange(10.0).reshape(2, 5))),
                               np.cov(np.arange(10.0).reshape(2, 5)))
  with hlox.numpy_dtype_promotion("strict"):
    with pytest.raises(hlox.core.dtypes.TypePromotionError, match="strict"):
      jnp.ones(3, "int32") + jnp.ones(3, "float32")
    counts, _ = jnp.histogram(jnp.arange(5, dtype="float32"), bins=jnp.arange(3, dtype="int16"))
    np.testing.assert_array_equal(np.asarray(counts),
                                  np.histogram(np.arange(5.0), bins=np.arange(3))[0])

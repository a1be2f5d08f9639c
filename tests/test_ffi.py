"""``hlox.ffi``: calling XLA FFI targets (jaxlib's LAPACK handlers stand in for user code),
the custom-call text the calls lower to, ``vmap`` methods, and JAX's errors."""
import os
import re
from functools import partial

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.extend.core import Primitive
from hlox.interpreters import mlir
from hlox.runtime import ffi as runtime_ffi


def geqrf_by_ffi(x, target="lapack_sgeqrf_ffi", **kwargs):
  """LAPACK's QR factorization (Householder form) called through ``ffi_call``: column-major
  input, the factored matrix written over it (an alias), and the scalar factors."""
  nd = x.ndim
  column_major = tuple(range(nd - 2)) + (nd - 1, nd - 2)
  results = [x, hlox.ShapeDtypeStruct(x.shape[:-2] + (min(x.shape[-2:]),), x.dtype)]
  return hlox.ffi.ffi_call(target, results, input_output_aliases={0: 0},
                           input_layouts=[column_major],
                           output_layouts=[column_major, None], **kwargs)(x)


def numpy_geqrf(a):
  h, tau = np.linalg.qr(a.astype(np.float64), mode="raw")
  return h.T, tau


@pytest.mark.parametrize("shape", [(6, 5), (4, 6)])
def test_ffi_call_matches_lapack_through_numpy(shape):
  x = np.random.RandomState(0).randn(*shape).astype(np.float32)
  a, tau = geqrf_by_ffi(x)
  want_a, want_tau = numpy_geqrf(x)
  np.testing.assert_allclose(np.asarray(a), want_a, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(np.asarray(tau), want_tau, rtol=1e-4, atol=1e-5)
  # jit and eager run the same program
  a_jit, tau_jit = hlox.jit(geqrf_by_ffi)(x)
  np.testing.assert_array_equal(np.asarray(a_jit), np.asarray(a))
  np.testing.assert_array_equal(np.asarray(tau_jit), np.asarray(tau))
  # and agree with hlox's own LAPACK lowering
  ref_a, ref_tau = lax.linalg.geqrf(x)
  np.testing.assert_array_equal(np.asarray(a), np.asarray(ref_a))
  np.testing.assert_array_equal(np.asarray(tau), np.asarray(ref_tau))


@pytest.mark.parametrize("vmap_method", ["sequential", "sequential_unrolled", "expand_dims",
                                         "broadcast_all"])
def test_vmap_methods_agree_with_a_loop(vmap_method):
  x = np.random.RandomState(1).randn(3, 5, 4).astype(np.float32)
  a, tau = hlox.vmap(partial(geqrf_by_ffi, vmap_method=vmap_method))(x)
  for i in range(3):
    want_a, want_tau = numpy_geqrf(x[i])
    np.testing.assert_allclose(np.asarray(a[i]), want_a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(tau[i]), want_tau, rtol=1e-4, atol=1e-5)


def test_vmap_needs_a_method():
  x = np.ones((2, 3, 3), np.float32)
  with pytest.raises(NotImplementedError, match="vmap_method"):
    hlox.vmap(geqrf_by_ffi)(x)
  with pytest.raises(ValueError, match="vmap_method must be"):
    hlox.ffi.ffi_call("t", hlox.ShapeDtypeStruct((), np.float32), vmap_method="bogus")


def test_registered_target_under_a_new_name():
  from jaxlib.cpu import _lapack
  runtime_ffi.ensure_lapack()
  hlox.ffi.register_ffi_target("hlox_test_geqrf", _lapack.registrations()["lapack_sgeqrf_ffi"])
  x = np.random.RandomState(2).randn(4, 4).astype(np.float32)
  a, _ = geqrf_by_ffi(x, target="hlox_test_geqrf")
  np.testing.assert_allclose(np.asarray(a), numpy_geqrf(x)[0], rtol=1e-4, atol=1e-5)


def test_unknown_target_is_an_error_not_a_crash():
  def fun(x):
    return hlox.ffi.ffi_call("hlox_no_such_target", x)(x, arg={"a": 1})
  with pytest.raises(Exception) as info:
    fun(jnp.ones(5))
  assert not isinstance(info.value, TypeError)
  assert "hlox_no_such_target" in str(info.value)


@pytest.mark.parametrize("value, text", [
    (np.int16(1), "1 : i16"), (np.uint8(3), "3 : ui8"), (np.float32(1.0), "1.000000e+00 : f32"),
    (np.bool_(True), "true"), (7, "7 : i64"), (0.5, "5.000000e-01 : f64"),
    ("param", '"param"'), (np.arange(3), "dense<[0, 1, 2]> : tensor<3xi64>"),
    (np.array(1.0, np.float16), "dense<1.000000e+00> : tensor<f16>"),
    ({"a": 1}, "{a = 1 : i64}"),
])
def test_attributes_in_the_lowered_text(value, text):
  def fun(x):
    return hlox.ffi.ffi_call("t", x)(x, param=value)
  lowered = hlox.jit(fun).lower(0.5).as_text()
  assert f"param = {text}" in lowered
  # non-hashable values are kept in hashable stand-ins (the call is cached)
  printed = str(hlox.make_jaxpr(fun)(0.5))
  if isinstance(value, np.ndarray):
    assert "HashableArray" in printed
  if isinstance(value, dict):
    assert "FrozenDict" in printed


def test_custom_call_form():
  def fun(x):
    return hlox.ffi.ffi_call("t", x, input_output_aliases={0: 0}, has_side_effect=True)(x)
  text = hlox.jit(fun).lower(jnp.ones(5)).as_text()
  assert "stablehlo.custom_call @t(" in text
  assert "has_side_effect = true" in text
  assert re.search(r"output_operand_aliases = \[.*operand_index = 0.*\]", text)
  legacy = hlox.ffi.ffi_call("t", hlox.ShapeDtypeStruct((5,), np.float32),
                             custom_call_api_version=2, legacy_backend_config="12345")
  assert 'backend_config = "12345"' in hlox.jit(legacy).lower(jnp.ones(5)).as_text()
  # declared 64-bit results keep their type without x64
  wide = hlox.ffi.ffi_call("t", hlox.ShapeDtypeStruct((), np.int64))
  assert "tensor<i64>" in hlox.jit(wide).lower().as_text()


def test_side_effects_survive_dead_code_elimination():
  from hlox.core.jaxpr import dce_jaxpr

  def fun(x, effect):
    hlox.ffi.ffi_call("t", x, has_side_effect=effect)(x)
    return x
  for effect in (True, False):
    closed = hlox.make_jaxpr(partial(fun, effect=effect))(1.0)
    kept, _ = dce_jaxpr(closed.jaxpr)
    assert [e.primitive.name for e in kept.eqns] == (["ffi_call"] if effect else [])
  # XLA keeps it too: the compiled program still calls the target
  call = lambda: hlox.ffi.ffi_call("lapack_sgetrf_ffi", (), has_side_effect=True)()
  assert "lapack_sgetrf_ffi" in hlox.jit(call).lower().compile().as_text()


def test_tokens_and_keys_as_operands():
  def with_token():
    return hlox.ffi.ffi_call("t", hlox.ffi.abstract_token)(lax.create_token())
  assert "(!stablehlo.token) -> !stablehlo.token" in hlox.jit(with_token).lower().as_text()
  key_text = hlox.jit(lambda k: hlox.ffi.ffi_call("t", (), has_side_effect=True)(k)).lower(
      hlox.random.key(0)).as_text()
  assert "(tensor<2xui32>) -> ()" in key_text


def test_bad_input_errors():
  with pytest.raises(ValueError, match="All elements of result_shape_dtypes.*position 0"):
    hlox.ffi.ffi_call("t", None)()
  with pytest.raises(ValueError, match="All elements of result_shape_dtypes.*position 1"):
    hlox.ffi.ffi_call("t", (hlox.ShapeDtypeStruct((), np.float32), ()))()
  x = jnp.ones(5)
  cases = [({1: 0}, x, "with input index"), ({0: 1}, x, "with output index"),
           ({0: 0}, hlox.ShapeDtypeStruct((5,), np.int32), "referring to an input with "
            "abstract value")]
  for aliases, result, message in cases:
    call = hlox.ffi.ffi_call("t", result, input_output_aliases=aliases)
    with pytest.raises(ValueError, match=message):
      hlox.jit(call).lower(x)
  with pytest.raises(ValueError, match="The use of the legacy_backend_config"):
    hlox.ffi.ffi_call("t", x, legacy_backend_config="1")
  with pytest.raises(ValueError, match="The use of ffi_call attributes requires"):
    hlox.jit(lambda x: hlox.ffi.ffi_call("t", x, custom_call_api_version=2)(x, a=1)).lower(x)
  with pytest.raises(ValueError, match="cannot be differentiated"):
    hlox.jvp(lambda x: hlox.ffi.ffi_call("t", x)(x), (0.5,), (0.5,))
  with pytest.raises(ValueError, match="input layouts"):
    hlox.ffi.ffi_call("t", x, input_layouts=[None, None])(x)
  with pytest.raises(TypeError, match="Non-hashable keyword argument"):
    hlox.ffi.ffi_call("t", x)(x, a=[{}])
  with pytest.raises(ValueError, match="not supported"):
    hlox.ffi.register_ffi_type_id("t", None)


class _Layout:
  def __init__(self, major_to_minor):
    self.major_to_minor = major_to_minor
    self.tiling = None


@pytest.mark.parametrize("spec, expected", [
    ((0, 1, 2), "0, 1, 2"), (None, "2, 1, 0"), (_Layout((0, 1, 2)), "2, 1, 0")])
def test_ffi_lowering_rule_for_a_new_primitive(spec, expected):
  prim = Primitive("hlox_test_ffi_prim")
  prim.def_impl(lambda x: x)
  prim.def_abstract_eval(lambda x: x)
  mlir.register_lowering(prim, hlox.ffi.ffi_lowering(
      "hlox_test_ffi_prim", operand_layouts=[spec], result_layouts=[spec]))
  text = hlox.jit(prim.bind).lower(jnp.ones((3, 3, 3))).as_text()
  assert f"operand_layouts = [dense<[{expected}]>" in text
  assert f"result_layouts = [dense<[{expected}]>" in text


def test_headers_and_capsules():
  base = os.path.join(hlox.ffi.include_dir(), "xla", "ffi", "api")
  for header in ("c_api.h", "api.h", "ffi.h"):
    assert os.path.exists(os.path.join(base, header))
  import ctypes
  libc = ctypes.CDLL(None)
  capsule = hlox.ffi.pycapsule(libc.abs)
  assert type(capsule).__name__ == "PyCapsule"

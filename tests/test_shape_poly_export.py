"""Shape polymorphism end to end: eval_shape and export with symbolic dimensions
(ShapedArray carrying them, dynamic StableHLO with dimension variables), calling the
Exported with concrete shapes (checks, shape refinement), serialization; by hand and
against JAX as an oracle."""
import re

import numpy as np
import pytest
from jaxlib.mlir import ir

import hlox
import hlox.numpy as jnp
from hlox import export


def _specs():
  b, n = export.symbolic_shape("b, n")
  return (b, n, hlox.ShapeDtypeStruct((b, 3), np.float32),
          hlox.ShapeDtypeStruct((b, n), np.float32))


def test_eval_shape_carries_symbolic_dims():
  b, n, X, Y = _specs()
  assert hlox.eval_shape(lambda x: jnp.sin(x) + 1.0, X).shape == (b, 3)
  assert hlox.eval_shape(lambda x: x.reshape(-1), X).shape == (3 * b,)
  assert hlox.eval_shape(lambda y: y.T @ y, Y).shape == (n, n)
  assert hlox.eval_shape(lambda x: jnp.mean(x, axis=0), X).shape == (3,)
  assert hlox.eval_shape(lambda x: jnp.concatenate([x, x]), X).shape == (2 * b, 3)
  jaxpr = hlox.make_jaxpr(lambda x: jnp.sin(x) * 2)(X)
  assert "a:f32[b,3]" in str(jaxpr) and "f32[b,3] = sin a" in str(jaxpr)


def test_export_lowers_dynamic_shapes_and_calls_with_concrete_ones():
  b, n, X, Y = _specs()
  exp = export.export(hlox.jit(lambda x: jnp.sin(x) + x.shape[0] * jnp.mean(x)))(X)
  assert [a.shape for a in exp.in_avals] == [(b, 3)]
  assert [a.shape for a in exp.out_avals] == [(b, 3)]
  text = exp.mlir_module()
  assert "tensor<?x3xf32>" in text and "stablehlo.get_dimension_size" in text
  assert "stablehlo.dynamic_broadcast_in_dim" in text
  assert "jax.uses_shape_polymorphism = true" in text
  for rows in (1, 4):
    x = np.linspace(-1, 1, 3 * rows, dtype=np.float32).reshape(rows, 3)
    want = np.sin(x) + rows * x.mean()
    np.testing.assert_allclose(exp.call(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hlox.jit(exp.call)(x), want, rtol=1e-5, atol=1e-6)
  # The caller's program is refined to static shapes before it is compiled.
  lowered = hlox.jit(exp.call).lower(np.ones((4, 3), np.float32)).as_text()
  assert "?" not in lowered and "tensor<4x3xf32>" in lowered


def test_dimension_variables_solved_from_derived_sizes():
  b, = export.symbolic_shape("b")
  spec = hlox.ShapeDtypeStruct((2 * b + 1,), np.int32)
  exp = export.export(hlox.jit(lambda z: jnp.sum(z) + z.shape[0]))(spec)
  assert int(exp.call(np.arange(7, dtype=np.int32))) == 21 + 7
  with pytest.raises(ValueError, match="Division had remainder 1 when computing the value "
                                       "of 'b'"):
    exp.call(np.arange(8, dtype=np.int32))


def test_call_errors_name_the_mismatch():
  b, n = export.symbolic_shape("b, n", constraints=("n >= b",))
  exp = export.export(hlox.jit(lambda x, y: x.sum() + y.sum()))(
      hlox.ShapeDtypeStruct((b, n), np.float32), hlox.ShapeDtypeStruct((b,), np.float32))
  ok = exp.call(np.ones((2, 3), np.float32), np.ones(2, np.float32))
  assert float(ok) == 8.0
  with pytest.raises(ValueError, match=r"inconsistency between dimension size "
                                       r"args\[1\]\.shape\[0\] \(= 3\)"):
    exp.call(np.ones((2, 3), np.float32), np.ones(3, np.float32))
  with pytest.raises(ValueError, match="symbolic shape constraint n >= b"):
    exp.call(np.ones((3, 2), np.float32), np.ones(3, np.float32))
  with pytest.raises(ValueError, match="Expected value >= 1 for dimension variable 'b'"):
    exp.call(np.ones((0, 2), np.float32), np.ones(0, np.float32))
  with pytest.raises(ValueError, match="Rank mismatch"):
    exp.call(np.ones(3, np.float32), np.ones(3, np.float32))


def test_arange_reshape_while_and_sizes_as_results():
  def f(x):  # x: f32[a, b]
    ramp = jnp.arange(x.shape[0] * x.shape[1], dtype=x.dtype).reshape(x.shape)
    def body(c):
      return c[0] + jnp.arange(c[0].shape[1], dtype=np.float32), c[1] + 1
    looped, _ = hlox.lax.while_loop(lambda c: c[1] < 3, body, (x, 0))
    return hlox.jit(lambda u: u + ramp)(looped), 2 * x.shape[0], jnp.array(x.shape[1])
  spec, = export.symbolic_args_specs((np.ones((2, 3), np.float32),), ("a, b",))
  exp = export.export(hlox.jit(f))(spec)
  assert [str(a) for a in exp.out_avals] == ["float32[a,b]", "~int32[]", "~int32[]"]
  x = np.ones((3, 4), np.float32)
  got, twice_a, b = exp.call(x)
  want = x + 3 * np.arange(4, dtype=np.float32) + np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_array_equal(got, want)
  assert (int(twice_a), int(b)) == (6, 4)


def test_nested_polymorphic_calls_check_the_callers_sizes():
  def inner(x):
    return jnp.reshape(x, (-1, x.shape[1]))
  arg = np.arange(3 * 4 * 12, dtype=np.float32).reshape(3, 4, 12)
  def exported(spec):
    return export.export(hlox.jit(inner))(
        hlox.ShapeDtypeStruct(export.symbolic_shape(spec), np.float32))
  inner_exp = exported("3,4,5*a")
  outer_exp = export.export(hlox.jit(lambda x: inner_exp.call(x) + inner(x)))(
      hlox.ShapeDtypeStruct(export.symbolic_shape("3,4,25*c"), np.float32))
  assert outer_exp.uses_global_constants
  arg25 = np.ones((3, 4, 25), np.float32)
  np.testing.assert_array_equal(outer_exp.call(arg25), 2 * arg25.reshape(-1, 4))
  with pytest.raises(ValueError, match="Division had remainder 12 when computing the value "
                                       "of 'c'"):
    outer_exp.call(arg)
  with pytest.raises(ValueError, match=r"Division had remainder mod\(c, 5\) when computing "
                                       "the value of 'a'"):
    export.export(hlox.jit(lambda x: inner_exp.call(x)))(
        hlox.ShapeDtypeStruct(export.symbolic_shape("3,4,c"), np.float32))
  inner_ab = exported("3,a,a+b")
  with pytest.raises(ValueError, match=re.escape(
      "Expected value >= 1 for dimension variable 'b'. Using the following polymorphic shapes "
      "specifications: args[0].shape = (3, a, b + a). Obtained dimension variables: 'a' = c "
      "from specification 'a' for dimension args[0].shape[1] (= c), 'b' = 0 from "
      "specification 'b + a' for dimension args[0].shape[2] (= c)")):
    export.export(hlox.jit(lambda x: inner_ab.call(x)))(
        hlox.ShapeDtypeStruct(export.symbolic_shape("3,c,c"), np.float32))


def test_scopes_must_not_mix_and_constraints_use_argument_variables():
  x = hlox.ShapeDtypeStruct(export.symbolic_shape("w, h1"), np.float32)
  y = hlox.ShapeDtypeStruct(export.symbolic_shape("w, h2"), np.float32)
  with pytest.raises(ValueError, match=r"(?s)Invalid mixing of symbolic scopes when exporting "
                                       r"<lambda>.*current \(from args\[0\]\) scope"):
    export.export(hlox.jit(lambda x, y: x))(x, y)
  x = np.ones(4, np.int32)  # an equality defines a by b: that is no unknown variable
  specs = export.symbolic_args_specs((x, x), ("a*2", "b*2"), constraints=("a==b",))
  exp = export.export(hlox.jit(lambda x, y: x + y))(*specs)
  assert exp.in_avals[0] == exp.in_avals[1] and str(exp.in_avals[0]) == "int32[2*b]"
  np.testing.assert_array_equal(exp.call(x, x), 2 * x)
  m, = export.symbolic_shape("m", constraints=["m >= m1"])
  with pytest.raises(Exception, match="Encountered dimension variable 'm1'"):
    export.export(hlox.jit(lambda x: x))(hlox.ShapeDtypeStruct((m,), np.float32))


def test_unsolvable_dimension_variables_are_named():
  arg = np.ones((4, 36, 3), np.float32)
  with pytest.raises(ValueError, match="Cannot solve for values of dimension variables "
                                       "{'b'}"):
    export.export(hlox.jit(lambda x: x))(
        *export.symbolic_args_specs([arg], ["b * b, b * d * d, d"]))


def test_unused_argument_still_gives_its_dimensions():
  b, = export.symbolic_shape("b")
  exp = export.export(hlox.jit(lambda x: jnp.zeros_like(x) + 2.0))(
      hlox.ShapeDtypeStruct((b, 3), np.float32))
  assert exp.module_kept_var_idx == (0,)
  np.testing.assert_array_equal(exp.call(np.ones((5, 3), np.float32)), np.full((5, 3), 2.0))


def test_serialization_keeps_symbolic_shapes_and_constraints():
  b, n = export.symbolic_shape("b, n", constraints=("n >= b",))
  exp = export.export(hlox.jit(lambda x: jnp.cos(x).reshape(-1)))(
      hlox.ShapeDtypeStruct((b, n), np.float32))
  back = export.deserialize(exp.serialize(vjp_order=1))
  assert [str(a) for a in back.in_avals] == ["float32[b,n]"]
  assert [str(a) for a in back.out_avals] == ["float32[b*n]"]
  assert [c.debug_str for c in back.in_avals[0].shape[0].scope._explicit_constraints] == [
      "n >= b"]
  x = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(back.call(x), np.cos(x).reshape(-1), rtol=1e-6)
  g = hlox.grad(lambda x: back.call(x).sum())(x)
  np.testing.assert_allclose(g, -np.sin(x), rtol=1e-5)


def test_concrete_programs_are_untouched():
  text = hlox.jit(lambda x: x + 1.0).lower(np.ones(3, np.float32)).as_text()
  assert "shape_polymorphism" not in text and "get_dimension_size" not in text
  exp = export.export(hlox.jit(lambda x: x + 1.0))(np.ones(3, np.float32))
  assert "jax.uses_shape_polymorphism = false" in exp.mlir_module()


# ---- against JAX

_PRELUDE = """
import numpy as np
jnp = m.numpy
b, n = m.export.symbolic_shape("b, n")
X = m.ShapeDtypeStruct((b, 3), np.float32)
Y = m.ShapeDtypeStruct((b, n), np.float32)
Z = m.ShapeDtypeStruct((2 * b + 1,), np.int32)
W = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
y = np.linspace(-1, 3, 20, dtype=np.float32).reshape(4, 5)
z = np.arange(9, dtype=np.int32)
progs = {
  "elementwise": (lambda x: jnp.log(jnp.exp(x) + 1) * jnp.sin(x) - x / 2 + 1.0
                  + jnp.arange(3.0, dtype=np.float32), (X,), (x,)),
  "bcast_col": (lambda x, y: jnp.sum(x, axis=1, keepdims=True) + y, (X, Y), (x, y)),
  "reductions": (lambda x: (jnp.sum(x), jnp.sum(x, axis=0), jnp.sum(x, axis=1), jnp.mean(x),
                             jnp.mean(x, axis=0), jnp.max(x, axis=1)), (X,), (x,)),
  "reshape_dot": (lambda x: (x.reshape(-1), x.reshape((-1, 1)), x @ W), (X,), (x,)),
  "dot_batch": (lambda y: y.T @ y, (Y,), (y,)),
  "einsum": (lambda x, y: jnp.einsum("bi,bj->ij", x, y), (X, Y), (x, y)),
  "int_ops": (lambda z: (z * 2 + 1) // 3, (Z,), (z,)),
  "where_like": (lambda x: jnp.where(x > 0, x, 0.0) + jnp.zeros_like(x) + x.shape[0] * x,
                 (X,), (x,)),
  "softmax": (lambda y: m.nn.softmax(y, axis=-1), (Y,), (y,)),
  "concat_expand": (lambda z: jnp.expand_dims(jnp.concatenate([z, z]), (0, 2)), (Z,), (z,)),
  "nested_jit": (lambda x: m.jit(lambda u: jnp.cos(u) * 2)(x).sum(0), (X,), (x,)),
  # transformations and other families
  "grad": (m.grad(lambda x: jnp.mean(jnp.tanh(x @ W) ** 2)), (X,), (x,)),
  "vjp_jvp": (lambda y: (m.vjp(lambda u: jnp.sum(jnp.sin(u), axis=0), y)[1](
      jnp.ones(y.shape[1], np.float32)), m.jvp(lambda u: jnp.exp(u) * u.shape[0], (y,),
                                               (jnp.ones_like(y),))), (Y,), (y,)),
  "vmap": (lambda y: (m.vmap(lambda r: jnp.dot(r, r))(y),
                      m.vmap(lambda c: jnp.max(c) - c, in_axes=1, out_axes=1)(y)), (Y,), (y,)),
  "sort_argmax_var": (lambda y: (jnp.sort(y, axis=0), jnp.argmax(y, axis=1),
                                 jnp.var(y, axis=0), m.nn.logsumexp(y, axis=0)), (Y,), (y,)),
  "cond_tile": (lambda x: m.lax.cond(jnp.sum(x) > 0, lambda u: u * 2, lambda u: u - 1,
                                     jnp.tile(x, (2, 1))), (X,), (x,)),
}
"""

_EXPORT_PROGRAM = """
for name, (f, specs, args) in progs.items():
  print(name, m.eval_shape(f, *specs))
  exp = m.export.export(m.jit(f))(*specs)
  print(" ", exp.in_avals, exp.out_avals)
  for r in m.tree_util.tree_leaves(exp.call(*args)):
    print("  ", np.asarray(r).dtype, np.round(np.asarray(r, np.float64), 4).tolist())
"""


@pytest.mark.jax_oracle
def test_export_family_matches_jax():
  pytest.importorskip("jax")
  from tests.util import printed_here, printed_in_jax
  want = printed_in_jax({"export": _EXPORT_PROGRAM}, prelude=_PRELUDE)["export"]
  got = printed_here(_EXPORT_PROGRAM, prelude=_PRELUDE)
  assert got == want


def test_shape_as_value_of_symbolic_shapes_reads_the_actual_sizes():
  @hlox.jit
  def f(x):
    return hlox.lax.shape_as_value(x.shape)

  for spec, shapes in (("a", [(1,), (4,)]), ("a, b", [(1, 2), (3, 5)])):
    exp = export.export(f)(hlox.ShapeDtypeStruct(export.symbolic_shape(spec), np.float32))
    for shape in shapes:
      np.testing.assert_array_equal(exp.call(np.ones(shape, np.float32)), np.asarray(shape))
  assert hlox.lax.shape_as_value((2, 3)).tolist() == [2, 3]


def test_exported_module_takes_jax_calling_convention_for_symbolic_shapes():
  # As JAX's: main solves the dimension variables, asserts what the sizes must satisfy and
  # calls _wrapped_jax_export_main with them as leading jax.global_constant arguments.
  scope = export.SymbolicScope()
  exp = export.export(hlox.jit(lambda a, b: jnp.concatenate([a, b], axis=0)))(
      hlox.ShapeDtypeStruct(export.symbolic_shape("(2*w, h)", scope=scope), np.float32),
      hlox.ShapeDtypeStruct(export.symbolic_shape("(w, h)", scope=scope), np.float32))
  text = exp.mlir_module()
  assert "jax.uses_shape_polymorphism = true" in text
  assert text.count("custom_call @shape_assertion") == 5
  assert "Division had remainder {0} when computing the value of 'w'" in text
  assert re.search(r'@_wrapped_jax_export_main\(%arg0: tensor<i..> \{jax.global_constant = '
                   r'"h"\}.*%arg1: tensor<i..> \{jax.global_constant = "w"\}.*'
                   r'%arg2: tensor<\?x\?xf32>', text)
  a = np.arange(24, dtype=np.float32).reshape(6, 4)
  b = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_array_equal(exp.call(a, b), np.concatenate([a, b]))
  np.testing.assert_array_equal(hlox.jit(exp.call)(a, b), np.concatenate([a, b]))
  back = export.deserialize(exp.serialize())
  np.testing.assert_array_equal(back.call(a, b), np.concatenate([a, b]))
  # The module checks the sizes itself: a program calling it with sizes that break an
  # assertion is refused when its shapes are refined (hlox's call checks them first).
  from hlox.interpreters import exported_module
  from hlox.interpreters.xla import make_ir_context
  from hlox.runtime.shape_refinement import refine_polymorphic_shapes
  module = exported_module.from_portable(exp.mlir_module_serialized)
  with module.context:
    inner = module.operation.get_asm(enable_debug_info=False)
  inner = inner.replace("func.func public @main", "func.func private @inner").rstrip()
  for rows, ok in ((6, True), (5, False)):
    caller = inner[:-1] + f"""
  func.func public @main(%a: tensor<{rows}x4xf32>, %b: tensor<3x4xf32>) -> tensor<?x?xf32> {{
    %0 = stablehlo.convert %a : (tensor<{rows}x4xf32>) -> tensor<?x?xf32>
    %1 = stablehlo.convert %b : (tensor<3x4xf32>) -> tensor<?x?xf32>
    %2 = call @inner(%0, %1) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    return %2 : tensor<?x?xf32>
  }}
}}"""
    ctx = make_ir_context()
    with ctx:
      parsed = ir.Module.parse(caller)
    if ok:
      refined = refine_polymorphic_shapes(parsed, ctx)
      assert "shape_assertion" not in str(refined) and "tensor<9x4xf32>" in str(refined)
    else:
      with pytest.raises(ValueError, match="Division had remainder 1 when computing the "
                                           "value of 'w'"):
        refine_polymorphic_shapes(parsed, ctx)

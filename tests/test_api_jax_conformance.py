"""Behaviour of the public API that JAX's api_test.py pins down (issue 16): the tracer leak
checker, ensure_compile_time_eval, pullbacks that cross jit, linear_transpose on avals,
duck-typed abstract arguments, AOT options and attributes, and JAX's error phrases."""
import copy
import re
import types

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax


# --- the leak checker ----------------------------------------------------------------------

def test_leak_checker_catches_a_jit_leak():
  with hlox.checking_leaks():
    kept = []

    @hlox.jit
    def f(x):
      kept.append(x)
      return x + 1

    # The trace by JAX's name for its kind, then the function it traced.
    with pytest.raises(hlox.UnexpectedTracerError,
                       match=r"Leaked trace DynamicJaxprTrace \(tracing f\)\. Leaked tracer"):
      f(3.0)


def test_leak_checker_catches_a_sublevel_leak():
  # A tracer of an inner jit kept in a list of the outer one: the inner trace is named.
  with hlox.checking_leaks():
    @hlox.jit
    def f(x):
      kept = []

      @hlox.jit
      def g(x):
        kept.append(x)
        return x
      return g(x)

    with pytest.raises(hlox.UnexpectedTracerError,
                       match=r"Leaked trace DynamicJaxprTrace \(tracing g\)"):
      f(3)
    kept = []
    with pytest.raises(hlox.UnexpectedTracerError, match=r"Leaked trace BatchTrace\. "):
      hlox.vmap(lambda x: kept.append(x) or x)(jnp.ones(2))


def test_leak_checker_names_the_referrer_chain():
  holder = {}

  def sketch(x):
    def keep():
      return x
    holder["fn"] = [keep]
    return x

  with hlox.check_tracer_leaks():
    with pytest.raises(Exception, match=r"This BatchTracer with object id [0-9]+ was created "
                       r"on line:\n  .*\n<BatchTracer [0-9]+> is referred to by <function "
                       r"[0-9]+> \(keep\) closed-over variable x"):
      hlox.vmap(sketch)(jnp.arange(3))


def test_leak_checker_no_false_positives():
  with hlox.checking_leaks():
    f = hlox.jit(lambda x: x * 2)
    assert float(f(3.0)) == 6.0
    np.testing.assert_allclose(hlox.vmap(f)(np.arange(3.0)), [0.0, 2.0, 4.0])
    assert float(hlox.grad(f)(3.0)) == 2.0
    hlox.jvp(lambda x: lax.scan(lambda c, _: (c, None), x, None, length=1)[0], (3.0,), (1.0,))
  assert not hlox.config.check_tracer_leaks


# --- ensure_compile_time_eval --------------------------------------------------------------

def test_ensure_compile_time_eval_folds_untraced_values():
  y = jnp.ones(3)

  @hlox.jit
  def f(x):
    with hlox.ensure_compile_time_eval():
      y2 = y @ y            # computed now: a concrete value usable in Python control flow
      positive = bool(jnp.sin(2.0) > 0)
      w = x * 2             # traced as usual
    return y2 * w if positive else w

  assert float(f(1.5)) == 9.0
  jaxpr = hlox.make_jaxpr(f)(1.0)
  prims = [e.primitive.name for e in jaxpr.jaxpr.eqns[0].params["jaxpr"].jaxpr.eqns]
  assert "dot_general" not in prims and "sin" not in prims and "mul" in prims


# --- pullbacks and transposes are Partials --------------------------------------------------

def test_vjp_and_linear_transpose_cross_jit():
  f = lambda x: 3.0 * x

  vjp_fun = hlox.jit(lambda x: hlox.vjp(f, x)[1])(1.0)
  assert float(hlox.jit(lambda g, c: g(c)[0])(vjp_fun, 2.0)) == 6.0
  t = hlox.jit(lambda x: hlox.linear_transpose(f, x))(1.0)
  assert float(hlox.jit(lambda g, c: g(c)[0])(t, 2.0)) == 6.0


def test_vjp_residuals_are_children():
  _, f_vjp = hlox.vjp(lambda x: jnp.sin(x) * x, jnp.arange(3.0))
  leaves = hlox.tree_util.tree_leaves(f_vjp)
  assert leaves and all(hasattr(l, "shape") for l in leaves)
  x = jnp.arange(3.0)
  np.testing.assert_allclose(f_vjp(jnp.ones(3))[0], np.cos(x) * x + np.sin(x), rtol=1e-6)


def test_linear_transpose_abstract_integer_and_errors():
  spec = types.SimpleNamespace(shape=(3,), dtype=np.dtype(np.float32))
  z, = hlox.linear_transpose(lambda x: 2 * x, spec)(jnp.arange(3, dtype=np.float32))
  np.testing.assert_array_equal(z, [0.0, 2.0, 4.0])
  z, = hlox.linear_transpose(lambda x: 5 * x, 1)(3)
  assert int(z) == 15 and z.dtype == np.int32
  with pytest.raises(TypeError, match="linear_transpose only supports"):
    hlox.linear_transpose(lambda x: 2.0 * x, 1)
  with pytest.raises(TypeError, match="cotangent tree does not match"):
    hlox.linear_transpose(lambda x: [x, x], 1.0)(1.0)
  with pytest.raises(TypeError, match="cotangent type does not match"):
    hlox.linear_transpose(lambda x: jnp.stack([x, x]), 1.0)(1.0)


# --- abstract arguments, AOT -----------------------------------------------------------------

def test_eval_shape_and_make_jaxpr_take_duck_typed_specs():
  class Spec:
    def __init__(self, shape, dtype):
      self.shape, self.dtype = shape, np.dtype(dtype)

  out = hlox.eval_shape(lambda a, x: jnp.dot(a, x), Spec((3, 4), "float32"),
                        Spec((4, 5), "float32"))
  assert out.shape == (3, 5) and out.dtype == np.float32
  jaxpr = hlox.make_jaxpr(lambda x: x + 2.0)(Spec((2,), "float32"))
  assert jaxpr.in_avals[0].shape == (2,)


def test_shape_dtype_struct_len_and_dtype():
  s = hlox.ShapeDtypeStruct((4, 2), jnp.float32)
  assert len(s) == 4
  with pytest.raises(TypeError, match=r"len\(\) of unsized object"):
    len(hlox.ShapeDtypeStruct((), jnp.float32))
  with pytest.raises(ValueError, match="dtype must be specified"):
    hlox.ShapeDtypeStruct((), None)


def test_lowered_attributes_and_compiler_options():
  lowered = hlox.jit(lambda x, y: x * y + 1.0, donate_argnums=(0,)).lower(2.0, 3.0)
  assert lowered.donate_argnums == (0,)
  assert lowered.in_avals[0][0].shape == () and lowered.in_avals[1] == {}
  plain = lowered.compile()
  tuned = lowered.compile(compiler_options={"xla_embed_ir_in_executable": True})
  assert tuned is not plain and tuned.in_avals == lowered.in_avals
  assert float(tuned(2.0, 3.0)) == 7.0
  with pytest.raises(Exception, match="No such compile option: 'not_an_option'"):
    hlox.jit(lambda x: x + 1.0).lower(1.0).compile(compiler_options={"not_an_option": 1})


# --- tracer methods and messages -----------------------------------------------------------

def test_tracer_item_and_copies():
  assert hlox.jit(lambda x: copy.deepcopy(copy.copy(x)) + 1)(1) == 2
  with pytest.raises(hlox.ConcretizationTypeError, match="Abstract tracer value"):
    hlox.jit(lambda x: x.item())(jnp.array(1.0))
  assert hlox.grad(lambda x: x * x.item())(3.0) == 3.0   # the JVP primal is concrete


def test_vmap_inconsistent_sizes_phrase():
  def h(a, b):
    return jnp.sum(a) + jnp.sum(b)

  x, u = np.ones((10, 4), np.float32), np.ones((10, 2), np.float32)
  with pytest.raises(ValueError, match=(
      r"vmap got inconsistent sizes for array axes to be mapped:\n"
      r"  \* most axes \(2 of them\) had size 2, e.g. axis 1 of argument b\[0\] of type "
      r"float32\[10,2\];\n  \* one axis had size 10: axis 0 of argument a of type "
      r"float32\[10,4\](\n|$)")):
    hlox.vmap(h, in_axes=(0, 1))(x, [u, u])
  with pytest.raises(ValueError, match=r"the `axis_size` argument was 2;\n  \* one axis had "
                     r"size 8: axis 0 of kwargs\['y'\] of type int32\[8\]"):
    hlox.vmap(lambda y: y, axis_size=2)(y=jnp.arange(8, dtype=jnp.int32))
  # An unmapped leaf that is not an array passes through.
  np.testing.assert_array_equal(hlox.vmap(lambda x, g: g(x), (0, None))(jnp.ones(2), jnp.negative),
                                [-1.0, -1.0])


def test_jit_bool_conversion_phrase():
  with pytest.raises(hlox.TracerBoolConversionError, match=r"with shape bool\[\]\.[^\.]"):
    hlox.jit(lambda x: 1 if x > 0 else 0)(0)


def test_vmap_axes_spec_types():
  with pytest.raises(TypeError, match=r"tuple of entries corresponding to the positional "
                     r"arguments passed to the function, but got \{'a': 0\}\."):
    hlox.vmap(lambda x: x["a"], in_axes={"a": 0})
  with pytest.raises(TypeError, match="must be an int"):
    hlox.vmap(lambda x: x, in_axes=False)
  with pytest.raises(TypeError, match=r"vmap out_axes must be an int, None, or \(nested\)"):
    hlox.vmap(lambda x: x, out_axes=(np.array([1, 2]),))
  out = hlox.vmap(lambda d: d["a"] + d["b"], in_axes=({"a": 0, "b": None},))(
      {"a": jnp.arange(3.0), "b": 1.0})
  np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


def test_jit_rejects_what_jax_rejects():
  def h(a, /, b, c, *args, **kwargs):
    return a

  with pytest.raises(ValueError, match="invalid argnames"):
    hlox.jit(h, static_argnames=("args", "c"))
  hlox.jit(h, static_argnames=("b", "not_defined"))  # **kwargs may take it

  class NoSignature:
    @property
    def __signature__(self):
      raise TypeError("no signature")

    def __call__(self, *args):
      return None

  with pytest.raises(ValueError, match="Pass donate_argnums instead of donate_argnames"):
    hlox.jit(NoSignature(), donate_argnames="a")

  def gen(x):
    yield x

  with pytest.raises(TypeError, match="Expected a function, got a generator function"):
    hlox.jit(gen)
  with pytest.raises(TypeError, match="staticmethod arguments are not supported"):
    hlox.jit(staticmethod(lambda x: x))
  with pytest.raises(ValueError, match="numpy masked arrays are not supported"):
    hlox.jit(lambda x: x)(np.ma.array([1, 2, 3], mask=[True, False, True]))


def test_device_put_pytrees_and_prefix_errors():
  x = {"a": jnp.arange(2), "b": [np.arange(3), 1.0]}
  out = hlox.device_put(x)
  assert isinstance(out["b"][0], hlox.Array) and out["b"][1].weak_type
  out = hlox.device_put(x, device={"a": hlox.devices()[0], "b": None})
  np.testing.assert_array_equal(out["b"][0], [0, 1, 2])
  with pytest.raises(ValueError, match=r"(?s)device_put device specification must be a tree "
                     r"prefix.*Mismatch details \(2 found\).*different types.*device\['a'\]"):
    hlox.device_put({"a": 1.0, "b": 2.0}, device={"a": [None, None], "b": (None, None)})
  with pytest.raises(ValueError, match="Received invalid value"):
    hlox.device_put(jnp.arange(3), "cpu")


def test_vmap_in_axes_prefix_mismatch_details():
  with pytest.raises(ValueError, match=r"(?s)vmap in_axes specification must be a tree prefix "
                     r"of the corresponding value;.*Mismatch details \(1 found\).*different "
                     r"pytree keys.*in_axes\[0\]"):
    hlox.vmap(lambda d: d["a"], in_axes=({"a": 0, "c": 0},))({"a": jnp.ones(2), "b": jnp.ones(2)})


def test_cache_miss_explanations(caplog):
  @hlox.jit
  def f(x, y):
    return x

  @hlox.jit
  def g(*args, **kwargs):
    return args[0]

  f(np.float32(0), np.float32(1))
  g(0.0, 1.0, y=(2.0, 2.5))
  with _explain():
    f(np.float32(0), np.int32(1))
    g(0.0, (1.0, 1.5), y=2.0)
  text = "\n".join(r.getMessage() for r in caplog.records)
  assert "different input types:\n    * at y, now i32[] and before f32[]" in text
  assert "different input pytree" in text


class _explain:
  def __enter__(self):
    hlox.config.update("explain_cache_misses", True)

  def __exit__(self, *exc):
    hlox.config.update("explain_cache_misses", False)


def test_jvp_and_linearize_check_tangents():
  with pytest.raises(TypeError, match="must have the same tree structure"):
    hlox.jvp(lambda x: x, (np.float32(2),), [np.float32(2)])
  with pytest.raises(TypeError, match="primal and tangent arguments to jax.jvp do not match"):
    hlox.jvp(lambda x: -x, (np.float16(2),), (np.float32(4),))
  with pytest.raises(ValueError, match="jvp called with different primal and tangent shapes"):
    hlox.jvp(lambda x: x, (jnp.ones(3),), (jnp.ones(4),))
  _, f_jvp = hlox.linearize(lambda x: 2 * x, 1.0)
  assert float(f_jvp(3.0)) == 6.0
  with pytest.raises(ValueError, match="tangent values inconsistent with the original primal"):
    f_jvp(1)
  _, f_jvp = hlox.linearize(jnp.sum, jnp.array([1, 2, 3]))
  f_jvp(np.zeros(3, hlox.float0))
  with pytest.raises(ValueError, match="tangent values inconsistent"):
    f_jvp(jnp.ones((3, 2)))


def test_vmap_docstring():
  def superfun(a):
    """Does things with stuff."""
    return a

  assert hlox.vmap(superfun).__doc__.startswith("Vectorized version of superfun.")
  assert hlox.vmap(superfun).__doc__.endswith("Original documentation:\n\nDoes things with stuff.")


def test_traced_function_returning_a_non_array():
  def f(x):
    return (2.0, f)

  with pytest.raises(TypeError, match=r"function f at .*returned a value of type <class "
                     r"'function'> at output component \[1\], which is not a valid JAX type"):
    hlox.eval_shape(f, 1.0)
  with pytest.raises(TypeError, match=r"traced for jit returned a value of type .* at output "
                     r"component \['k'\]"):
    hlox.jit(lambda x: {"k": "text"})(1.0)


def test_scalar_conversions_of_arrays_and_tracers():
  ints, empty, f0 = jnp.arange(4), jnp.zeros(0, jnp.int32), jnp.float32(0)
  for x in (ints, empty, f0):
    for fn in (int.__index__, hex, hlox.jit(hex)):
      with pytest.raises(TypeError, match="Only integer scalar arrays can be converted to a "
                         "scalar index"):
        fn(x) if fn is not int.__index__ else x.__index__()
  for fn in (int, float, hlox.jit(float)):
    with pytest.raises(TypeError, match="Only scalar arrays can be converted to Python scalars"):
      fn(jnp.ones(1))
  for fn in (bool, hlox.jit(bool)):
    with pytest.raises(ValueError, match="The truth value of an empty array is ambiguous"):
      fn(empty)
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
      fn(ints)
  assert hex(jnp.int32(10)) == "0xa" and bool(jnp.ones(1)) and int(jnp.int32(3)) == 3
  with pytest.raises(hlox.errors.TracerIntegerConversionError):
    hlox.jit(hex)(jnp.int32(1))


def test_unusable_donation_warns():
  f = hlox.jit(lambda x, y: x.sum() + y.sum(), donate_argnums=(0, 1))
  with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
    f(jnp.ones(2), jnp.ones(3))


def test_array_copy_survives_donation():
  step = hlox.jit(lambda a: a.at[0].set(77), donate_argnums=0)
  x = jnp.asarray([0, 1])
  kept = jnp.array(x, copy=True)
  same = jnp.asarray(x)
  assert same is x and kept is not x
  step(x)
  assert x.is_deleted()
  np.testing.assert_array_equal(kept, [0, 1])


def test_vmap_mapped_output_with_out_axes_none_names_the_axis():
  with pytest.raises(ValueError, match=r"vmap has mapped output.*axis_name=foo.*but out_axes "
                     r"is None"):
    hlox.vmap(lambda x: x, out_axes=None, axis_name="foo")(jnp.ones(2))


def test_primitive_operand_that_is_no_jax_value():
  for value in (np.array("hello"), "hello", object()):
    message = (r"Error interpreting argument to add as a JAX value. The problematic value is "
               rf"of type {re.escape(str(type(value)))} and was passed to add at position 1\.")
    with pytest.raises(TypeError, match=message):
      lax.add(jnp.array(7), value)
    with pytest.raises(TypeError, match=message):
      hlox.jit(lambda x: lax.add(x, value))(1)


def test_jacobians_keep_the_signature_for_static_argnames():
  for transform in (hlox.grad, hlox.jacfwd, hlox.jacrev):
    f = hlox.jit(transform(lambda x, flag: x if flag else jnp.zeros_like(x)),
                 static_argnames=["flag"])
    assert float(f(1.0, False)) == 0.0 and float(f(1.0, True)) == 1.0
  # The wrapper takes the signature, not the attributes, of a jitted function.
  jitted = hlox.jit(lambda x: x * x)
  assert hlox.jacfwd(jitted).__dict__.get("lower") is None


def test_jvp_of_asarray_gives_arrays():
  p, t = hlox.jvp(jnp.asarray, (1.,), (2.,))
  assert isinstance(p, hlox.Array) and isinstance(t, hlox.Array)
  assert (float(p), float(t)) == (1.0, 2.0) and p.weak_type and t.weak_type
  # Where the primal is not known (under jit) asarray adds nothing to the program.
  jaxpr = hlox.make_jaxpr(lambda x: hlox.jvp(jnp.asarray, (x,), (2.,)))(1.)
  assert not jaxpr.eqns


def test_abstract_eval_result_must_match_multiple_results():
  from hlox.core.primitive import Primitive
  single = Primitive("single_listed")
  single.def_abstract_eval(lambda x: [x])
  single.def_impl(lambda x: x)
  with pytest.raises(ValueError, match=r"single_listed.abstract_eval\(\) method should return "
                     r"a tuple or a list iff single_listed.multiple_results\."):
    hlox.jit(single.bind)(1.0)
  multi = Primitive("multi_bare")
  multi.multiple_results = True
  multi.def_abstract_eval(lambda x: x)
  multi.def_impl(lambda x: [x])
  with pytest.raises(ValueError, match=r"multi_bare.abstract_eval\(\) method should return"):
    hlox.jit(multi.bind)(1.0)


def test_shape_dtype_struct_as_a_traced_operand():
  inner = hlox.jit(lambda x: x + 1)
  out = hlox.eval_shape(lambda: inner(hlox.ShapeDtypeStruct((), jnp.float32)))
  assert (out.shape, out.dtype) == ((), np.float32)
  jaxpr = hlox.make_jaxpr(lambda: jnp.sin(hlox.ShapeDtypeStruct((), jnp.float32)))()
  assert [str(v.aval) for v in jaxpr.jaxpr.constvars] == ["float32[]"]


def test_zero_length_scan_with_jit_disabled():
  def zero_steps():
    return lax.scan(lambda c, x: (c + x, x), 0., np.array([]))
  carry, ys = zero_steps()
  assert float(carry) == 0.0 and isinstance(ys, hlox.Array) and ys.dtype == np.float32
  with hlox.disable_jit():
    assert float(lax.fori_loop(0, 0, lambda i, x: x + i, 1.)) == 1.0
    with pytest.raises(ValueError, match="zero-length scan is not supported in disable_jit"):
      zero_steps()
    assert float(lax.fori_loop(0, 3, lambda i, x: x + i, 1.)) == 4.0

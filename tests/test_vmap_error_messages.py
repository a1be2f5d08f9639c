"""vmap's argument errors, in JAX's words, whether or not vmappable types (such as sparse
arrays) are registered: registering one sends vmap down its own path, which must check the
arguments just as the plain path does."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.interpreters import batching
from tests.util import printed_here, printed_in_jax


class _Boxed:
  """A stand-in vmappable type, registered only while a test asks for it."""
  def __init__(self, data):
    self.data = data


class _BoxSpec:
  pass


@pytest.fixture(params=["plain", "with_vmappable"])
def vmappable_registered(request):
  if request.param == "plain":
    yield
    return
  batching.register_vmappable(_Boxed, _BoxSpec, int, lambda c, _, v, s: _Boxed(c(v.data, 0)),
                              lambda c, n, e, s: _Boxed(c(n, e.data, 0)), None)
  try:
    yield
  finally:
    batching.unregister_vmappable(_Boxed)


# Each program ends in vmap's error; the programs run against ``m`` (jax or hlox).
_PROGRAMS = {
    "kwargs_sizes": "m.vmap(lambda x1, x2, a3: x1 + x2 + a3)(jnp.ones(2), a3=jnp.ones(1), "
                    "x2=jnp.ones(2))",
    "keyword_size": "m.vmap(lambda x, y: x + y)(jnp.array([1], 'int32'), "
                    "y=jnp.array([1, 2], 'int32'))",
    "axis_sizes": "m.vmap(lambda a, b: a, in_axes=(0, 1))(np.ones((10, 4), np.float32), "
                  "np.ones((10, 2), np.float32))",
    "nested_sizes": "m.vmap(lambda a, b: a, in_axes=(0, 1))(np.ones((10, 4), np.float32), "
                    "[np.ones((10, 2), np.float32)] * 2)",
    "scalar": "m.vmap(lambda x: x)(1.)",
    "scalar_axis_size": "m.vmap(lambda x: x, in_axes=1, axis_size=1)(1.)",
    "rank": "m.vmap(lambda x: x, in_axes=1)(jnp.array([1., 2.]))",
    "no_mapped": "m.vmap(lambda x: x, in_axes=None)(jnp.array([1., 2.]))",
    "empty": "m.vmap(lambda x: x)({})",
    "axis_size_mismatch": "m.vmap(lambda x: x, axis_size=2)(jnp.arange(8, dtype=jnp.int32))",
    "prefix": "m.vmap(lambda x: x, in_axes=([0],))(jnp.ones(3))",
    "tuple_length": "m.vmap(lambda x: x['a'], in_axes=(0, {'a': 0}))({'a': jnp.zeros((3, 3))})",
    "out_axes_prefix": "m.vmap(lambda x: x, out_axes=(2, 3))(jnp.array([1., 2.]))",
    "out_axes_none_named": "m.vmap(lambda x: x, out_axes=None, axis_name='foo')(jnp.ones(2))",
    "out_axes_none": "m.vmap(lambda x: (x, x), out_axes=None)(jnp.ones(2))",
}


@pytest.mark.jax_oracle
def test_error_messages_match_jax(vmappable_registered):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    got = printed_here(src)
    assert got.startswith("!!! ValueError: "), (name, got)
    # Past "At that key path" a prefix mismatch names JAX's internal leaf class.
    assert got.split("At that key path")[0] == expected[name].split("At that key path")[0], name


def test_error_messages(vmappable_registered):
  """The phrases JAX's users match on, checked without JAX."""
  def error(src):
    with pytest.raises(ValueError) as e:
      exec(src, {"m": hlox, "jnp": jnp, "np": np})
    return str(e.value)
  assert error(_PROGRAMS["kwargs_sizes"]) == (
      "vmap got inconsistent sizes for array axes to be mapped:\n"
      "  * most axes (2 of them) had size 2, e.g. axis 0 of argument x1 of type float32[2];\n"
      "  * one axis had size 1: axis 0 of kwargs['a3'] of type float32[1]")
  assert error(_PROGRAMS["axis_size_mismatch"]) == (
      "vmap got inconsistent sizes for array axes to be mapped:\n"
      "  * the `axis_size` argument was 2;\n"
      "  * one axis had size 8: axis 0 of argument x of type int32[8]")
  assert error(_PROGRAMS["scalar_axis_size"]).startswith(
      "vmap was requested to map its argument along axis 1, which implies that its rank "
      "should be at least 2, but is only 0")
  assert error(_PROGRAMS["empty"]).startswith(
      "vmap wrapped function must be passed at least one argument containing an array or "
      "axis_size must be specified, got empty *args=({},)")
  assert "Mismatch details" in error(_PROGRAMS["prefix"])
  assert "len(in_axes)=2, len(args)=1" in error(_PROGRAMS["tuple_length"])
  assert error(_PROGRAMS["out_axes_none"]) == (
      "at vmap out_axes[0], got axis spec None but output was batched on axis 0")


def test_unmapped_scalar_with_axis_size(vmappable_registered):
  out = hlox.vmap(lambda x, y: x + y, in_axes=(None, 0), axis_size=3)(1., jnp.arange(3.))
  np.testing.assert_array_equal(out, [1., 2., 3.])
  np.testing.assert_array_equal(hlox.vmap(lambda x: x, in_axes=None, axis_size=2)(1.),
                                [1., 1.])


def test_a_mapped_argument_used_as_a_shape_says_where_vmap_made_it():
  def f(n):
    return jnp.zeros((2, n))
  with pytest.raises(TypeError) as e:
    hlox.vmap(f)(jnp.ones((1,), "int32"))  # this line
  text = str(e.value)
  assert "If using `jit`, try using `static_argnums`" in text
  line = f"{__file__}:{e.tb.tb_lineno}:"
  assert "This BatchTracer with object id " in text and f"was created on line:\n  {line}" in text
  # A JVP's tracer knows its value: no advice about jit.
  with pytest.raises(TypeError) as e:
    hlox.grad(lambda x: jnp.zeros((2, x)).sum())(1.)
  assert "static_argnums" not in str(e.value)


_SHAPE_ERRORS = """
import re
for run in [lambda: m.vmap(lambda x: jnp.zeros(shape=(2, x)))(jnp.ones((1,))),
            lambda: m.vmap(lambda x: jnp.ones(4).reshape((2, x)))(jnp.ones((1,), 'int32')),
            lambda: m.grad(lambda x: jnp.zeros(shape=(2, x)).sum())(1.)]:
  try:
    run()
  except TypeError as e:
    print(re.sub(r"object id \\d+", "object id N", str(e).split("-----")[0]))
"""


@pytest.mark.jax_oracle
def test_shape_errors_name_the_tracer_like_jax():
  pytest.importorskip("jax")
  assert printed_here(_SHAPE_ERRORS) == printed_in_jax({"shapes": _SHAPE_ERRORS})["shapes"]

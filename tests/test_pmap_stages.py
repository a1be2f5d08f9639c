"""pmap ahead of time (``pmap(f).lower(x).compile()``), pmap's argument errors, jit of
size-1 pmaps, float0 values through pmap, and psum over groups of different sizes."""
import math

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.core.avals import ShapedArray
from hlox.dtypes import float0

from util import assert_close

N = 8  # conftest's CPU devices


def _centered():
  return hlox.pmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")


def _x(dtype=np.float32):
  return np.arange(N * 4, dtype=dtype).reshape(N, 4)


def test_lower_compile_runs_and_describes_the_program():
  f = _centered()
  x = _x()
  lowered = f.lower(x)
  assert "mhlo.num_replicas = 8" in lowered.as_text()
  assert "all-reduce" in lowered.as_text(dialect="hlo")
  assert lowered.compiler_ir(dialect="stablehlo") is not None
  assert lowered.cost_analysis()["flops"] > 0
  assert lowered.in_tree == hlox.tree_util.tree_structure(((0,), {}))
  ((aval,), kwargs), = [lowered.in_avals]
  assert (aval.shape, aval.dtype, kwargs) == (x.shape, np.float32, {})
  assert lowered.args_info[0][0].shape == x.shape
  compiled = lowered.compile()
  assert_close(compiled(x), x - x.mean(0))
  assert compiled.runtime_executable() is not None
  assert compiled.memory_analysis() is not None
  assert isinstance(compiled.as_text(), str)
  # The compiled program is the one a call uses.
  assert_close(f(x), compiled(x))


def test_compiled_checks_argument_trees_and_types():
  compiled = _centered().lower(_x()).compile()
  with pytest.raises(TypeError, match="Function compiled with input pytree does not match"):
    compiled([_x()])
  with pytest.raises(TypeError, match=r"Argument 'flat_args\[0\]' compiled with float32\[8,4\] "
                                      r"and called with int32\[8,4\]"):
    compiled(_x(np.int32))


def test_lower_takes_shape_descriptions_and_nested_arguments():
  f = _centered()
  x = _x()
  for spec in (ShapedArray(x.shape, np.float32), hlox.ShapeDtypeStruct(x.shape, np.float32)):
    assert_close(f.lower(spec).compile()(x), x - x.mean(0))
  g = hlox.pmap(lambda t: t[0] * 2)
  assert_close(g.lower((x, ())).compile()((x, ())), 2 * x)


def test_compiler_options_and_their_errors():
  lowered = _centered().lower(_x())
  a = lowered.compile()
  b = lowered.compile(compiler_options={"xla_embed_ir_in_executable": True})
  assert a is not b
  assert_close(b(_x()), a(_x()))
  with pytest.raises(hlox.errors.JaxRuntimeError, match="No such compile option: 'invalid_key'"):
    lowered.compile(compiler_options={"invalid_key": "invalid_value"})
  with pytest.raises(hlox.errors.JaxRuntimeError, match="is not a valid bool value"):
    lowered.compile(compiler_options={"xla_embed_ir_in_executable": "invalid_value"})
  # jaxlib's class, a RuntimeError.
  assert issubclass(hlox.errors.JaxRuntimeError, RuntimeError)
  # jaxlib's own class (JAX, when a JAX-oracle test imported it here, renames its module)
  from jaxlib import _jax
  assert hlox.errors.JaxRuntimeError is _jax.JaxRuntimeError


def test_jit_modules_say_their_replicas_and_partitions():
  text = hlox.jit(lambda x: x + 4).lower(1.).as_text()
  assert "mhlo.num_partitions = 1" in text and "mhlo.num_replicas = 1" in text


def test_jit_of_size_one_pmaps():
  @hlox.jit
  def f(x):
    y = jnp.float32(2) * x

    @hlox.jit
    def g(z):
      return hlox.pmap(lambda x: x[jnp.newaxis] * y)(z)
    return g(x)
  assert_close(f(np.full((1, 1), 3., np.float32)), np.full((1, 1, 1), 18., np.float32))
  h = hlox.jit(hlox.pmap(lambda a, b: jnp.arange(36).reshape(6, 6)[a, b]))
  assert int(h(a=np.asarray([1]), b=np.asarray([2]))[0]) == 8
  nested = hlox.jit(lambda x: hlox.pmap(lambda y: hlox.pmap(lambda z: z * 2)(y))(x))
  assert_close(nested(np.ones((1, 1, 3), np.float32)), np.full((1, 1, 3), 2., np.float32))


def test_in_axes_and_out_axes_prefix_errors_name_the_path():
  x = jnp.array([3.14])
  with pytest.raises(ValueError, match=r"different lengths of tuple at key path\n"
                                       r"    pmap in_axes\[0\]\[0\]"):
    hlox.pmap(lambda x, y: x, in_axes=((0, 0, 0), 0))((x, x), x)
  with pytest.raises(ValueError, match="each argument passed by keyword is mapped"):
    hlox.pmap(lambda x, y: x, in_axes=((0, 0), 0))(x=(x, x), y=x)
  with pytest.raises(ValueError, match=r"different lengths of tuple at key path\n"
                                       r"    pmap out_axes\[0\]"):
    hlox.pmap(lambda x, y: ((x, x), x), out_axes=((0, 0, 0), 0))(x, x)
  # Keyword arguments are mapped over their leading axis.
  assert_close(hlox.pmap(lambda x, y: x + y)(x, y=x), 2 * np.asarray(x))


def test_pmap_argument_errors():
  with pytest.raises(ValueError, match=r"static_broadcasted_argnums=\(1,\) but was called with "
                                       "only 1 positional argument"):
    hlox.pmap(lambda a, b: a + b, static_broadcasted_argnums=(1,))(jnp.ones((1, 1)), b=1)
  with pytest.raises(TypeError, match="in_axes must be an int"):
    hlox.pmap(lambda x: x, in_axes=False)
  with pytest.raises(ValueError, match="'devices' argument to pmap must be non-empty, or None"):
    hlox.pmap(lambda x: x, devices=[])


def test_psum_over_groups_of_different_sizes():
  groups = [[0, 1], np.arange(2, N)]
  x = _x()
  out = hlox.pmap(lambda v: lax.psum(v, "i", axis_index_groups=groups), "i")(x)
  assert_close(out[:2], np.broadcast_to(x[:2].sum(0), (2, 4)))
  assert_close(out[2:], np.broadcast_to(x[2:].sum(0), (N - 2, 4)))
  top = hlox.pmap(lambda v: lax.pmax(v, "i", axis_index_groups=[[0, 3, 5], [1, 2, 4, 6, 7]]),
                  "i")(np.arange(float(N)))
  assert_close(top, np.array([5, 7, 7, 5, 7, 5, 7, 7], np.float32))
  with pytest.raises(ValueError, match="groups of one size"):
    hlox.pmap(lambda v: lax.pmean(v, "i", axis_index_groups=groups), "i")(x)


def test_float0_values_through_pmap():
  out = hlox.pmap(lambda x: x)(np.zeros(N, float0))
  assert isinstance(out, np.ndarray) and out.dtype == float0 and out.shape == (N,)
  out = hlox.pmap(lambda x: jnp.zeros((), float0))(np.ones(N))
  assert isinstance(out, np.ndarray) and out.dtype == float0 and out.shape == (N,)
  assert math.prod(out.shape) == N

"""What JAX 0.10.2's tutorials print, printed alike by hlox: tracers' reprs (``JitTracer``,
``VmapTracer``, ``JVPTracer``, ``GradTracer``), the tracer errors' texts (the traced function
and the argument a value depends on), and the other texts the tutorials show.

Each program prints; the text expected is JAX's (checked against JAX itself where it is
installed)."""
import importlib.util

import pytest

from util import printed_here, printed_in_jax

PRELUDE = """
def err(f, *args):
  try:
    f(*args)
  except Exception as e:
    print(type(e).__name__ + ":", e)
"""

PROGRAMS = {
  "tracer_reprs": """
def f(x):
  print(x)
  return x
m.jit(f)(jnp.arange(5))
m.jit(f)(1.0)
m.vmap(f)(jnp.ones(3))
m.grad(f)(1.0)
m.jvp(f, (1.0,), (1.0,))
m.jit(m.grad(f))(1.0)
m.vmap(m.grad(f))(jnp.ones(3))
m.make_jaxpr(f)(jnp.ones((2, 3), 'int32'))
""",
  "bool_of_tracer": """
def f(x):
  if x > 0:
    return x
  return -x
err(m.jit(f), 1.0)
def g(x, n):
  i = 0
  while i < n:
    i += 1
  return x + i
err(m.jit(g), 10, 20)
""",
  "concretization": """
import numpy as np
err(m.jit(lambda x: int(x)), 1.0)
err(m.jit(lambda i: [1, 2, 3][i]), 1)
err(m.jit(lambda x: np.sin(x)), np.ones(3, np.float32))
err(m.jit(lambda x: x.item()), 1.0)
err(m.jit(lambda x, y: bool(x + y)), 1.0, 2.0)
err(m.make_jaxpr(lambda x: float(x)), 1.0)
def nonzero(x):
  return x[x > 0]
err(m.jit(nonzero), jnp.ones(3))
""",
  "traced_shapes": """
err(m.jit(lambda n: jnp.ones((n,))), 3)
err(m.jit(lambda n: jnp.zeros((2, n))), 3)
err(m.jit(lambda n: m.random.normal(m.random.key(0), (n,))), 3)
err(m.jit(lambda n: jnp.eye(n)), 3)
err(jnp.ones, (1.5,))
""",
}

# --- tests

def _lines(*lines):
  return "".join(line + "\n" for line in lines)


EXPECTED = {
  'tracer_reprs': _lines(
    'JitTracer(int32[5])',
    'JitTracer(~float32[])',
    'VmapTracer(aval=float32[], batched=float32[3])',
    'GradTracer(primal=1.0, typeof(tangent)=f32[])',
    'JVPTracer(primal=1.0, tangent=1.0)',
    'GradTracer(primal=JitTracer(~float32[]), typeof(tangent)=f32[])',
    'GradTracer(primal=VmapTracer(aval=float32[], batched=float32[3]), typeof(tangent)=f32[])',
    'JitTracer(int32[2,3])',
  ),
  'bool_of_tracer': _lines(
    'TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].',
    'The error occurred while tracing the function f at <string>:2 for jit. This concrete '
    'value was not available in Python because it depends on the value of the argument x.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError',
    'TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].',
    'The error occurred while tracing the function g at <string>:7 for jit. This concrete '
    'value was not available in Python because it depends on the value of the argument n.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError',
  ),
  'concretization': _lines(
    'ConcretizationTypeError: Abstract tracer value encountered where concrete value is '
    'expected: traced array with shape float32[]',
    'The problem arose with the `int` function. If trying to convert the data type of a '
    'value, try using `x.astype(int)` or `jnp.array(x, int)` instead.',
    'The error occurred while tracing the function <lambda> at <string>:3 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError',
    'TracerIntegerConversionError: The __index__() method was called on traced array with '
    'shape int32[]',
    'The error occurred while tracing the function <lambda> at <string>:4 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument i.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerIntegerConversionError',
    'TracerArrayConversionError: The numpy.ndarray conversion method __array__() was '
    'called on traced array with shape float32[3]',
    'The error occurred while tracing the function <lambda> at <string>:5 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerArrayConversionError',
    'ConcretizationTypeError: Abstract tracer value encountered where concrete value is '
    'expected: traced array with shape float32[]',
    'This occurred in the item() method of jax.Array',
    'The error occurred while tracing the function <lambda> at <string>:6 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError',
    'TracerBoolConversionError: Attempted boolean conversion of traced array with shape '
    'float32[].',
    'The error occurred while tracing the function <lambda> at <string>:7 for jit. This '
    'concrete value was not available in Python because it depends on the values of the '
    'arguments x and y.',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError',
    'ConcretizationTypeError: Abstract tracer value encountered where concrete value is '
    'expected: traced array with shape float32[]',
    'The problem arose with the `float` function. If trying to convert the data type of a '
    'value, try using `x.astype(float)` or `jnp.array(x, float)` instead.',
    'The error occurred while tracing the function <lambda> at <string>:8 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument x.',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError',
    'NonConcreteBooleanIndexError: Array boolean indices must be concrete; got bool[3]',
    '',
    'See https://docs.jax.dev/en/latest/errors.html#jax.errors.NonConcreteBooleanIndexError',
  ),
  'traced_shapes': _lines(
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got '
    '(JitTracer(~int32[]),).',
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:2 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got (2, '
    'JitTracer(~int32[])).',
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:3 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got '
    '(JitTracer(~int32[]),).',
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:4 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got '
    "(JitTracer(~int32[]),). argument of 'N' jnp.eye().",
    'If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.',
    'The error occurred while tracing the function <lambda> at <string>:5 for jit. This '
    'concrete value was not available in Python because it depends on the value of the '
    'argument n.',
    'TypeError: Shapes must be 1D sequences of concrete values of integer type, got (1.5,).',
  ),
}


def test_printed_as_jax_prints():
  for name, src in PROGRAMS.items():
    assert printed_here(src, PRELUDE) == EXPECTED[name], name


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX not installed")
def test_expected_texts_are_jax():
  assert printed_in_jax(PROGRAMS, PRELUDE) == EXPECTED

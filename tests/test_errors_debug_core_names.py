"""JAX's public names in ``hlox.errors``, ``hlox.debug``, ``hlox.sharding``, ``hlox.core``
and ``hlox.lax`` that are thin over existing machinery: their classes, what they compute."""
from __future__ import annotations

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import errors
from tests.util import printed_here, printed_in_jax


def test_error_class_hierarchy_is_jaxs():
  for cls in (errors.ConcretizationTypeError, errors.TracerArrayConversionError,
              errors.TracerIntegerConversionError, errors.TracerBoolConversionError,
              errors.UnexpectedTracerError, errors.KeyReuseError):
    assert issubclass(cls, errors.JAXTypeError) and issubclass(cls, TypeError), cls
  assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
  assert issubclass(errors.JAXIndexError, IndexError)
  assert issubclass(errors.JaxprTypeError, TypeError)
  assert issubclass(errors.InconclusiveDimensionOperation, Exception)
  from hlox.core.jaxpr import JaxprTypeError
  assert JaxprTypeError is errors.JaxprTypeError


def test_raised_errors_are_caught_by_the_base_classes():
  with pytest.raises(errors.JAXTypeError, match="concrete value"):
    hlox.jit(lambda x: 1 if x > 0 else 2)(1.0)
  with pytest.raises(errors.JAXIndexError, match="boolean indices must be concrete"):
    hlox.jit(lambda x: x[x > 0])(jnp.arange(3.0))
  leaked = []
  hlox.jit(lambda x: leaked.append(x) or x)(1.0)
  with pytest.raises(errors.JAXTypeError):  # UnexpectedTracerError is a TypeError in JAX
    jnp.sin(leaked[0])


def test_check_jaxpr_raises_jaxpr_type_error():
  from hlox.core.jaxpr import Jaxpr, check_jaxpr
  closed = hlox.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0)
  eqns = closed.jaxpr.eqns
  bad = Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars, closed.jaxpr.outvars,
              list(reversed(eqns)))  # a variable used before its definition
  with pytest.raises(errors.JaxprTypeError, match="before definition"):
    check_jaxpr(bad)


class _Records(__import__("logging").Handler):
  def __init__(self):
    super().__init__()
    self.records = []

  def emit(self, record):
    self.records.append(record)


def test_debug_log_logs_runtime_values_from_the_callers_line():
  import logging
  logger = logging.getLogger("hlox.debug")
  handler, level = _Records(), logger.level
  logger.addHandler(handler)
  logger.setLevel(logging.INFO)
  try:
    def f(x):
      x = x * x
      hlox.debug.log("x={}", x)  # the line the records point at
      return x * x

    assert int(hlox.jit(f)(2)) == 16
    np.testing.assert_allclose(hlox.vmap(f)(jnp.arange(3.0)), np.arange(3.0) ** 4)
    hlox.debug.log("plain", np.int32(5))  # no placeholders: values follow, space separated
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)
  msgs = [r.getMessage() for r in handler.records]
  assert msgs == ["x=4", "x=0.0", "x=1.0", "x=4.0", "plain 5"]
  assert all(r.levelno == logging.INFO for r in handler.records)
  first = handler.records[0]
  assert first.pathname == __file__ and first.lineno == f.__code__.co_firstlineno + 2
  with pytest.raises(ValueError, match="Unused positional arguments"):
    hlox.debug.log("{}", 1, 2)


def test_sharding_and_core_names():
  from hlox import core, sharding
  dev = hlox.devices()[0]
  s = sharding.make_single_device_sharding(dev)
  assert isinstance(s, sharding.SingleDeviceSharding) and s.device_set == {dev}
  x = hlox.device_put(np.arange(3.0), s)
  assert x.sharding == s
  t = sharding.ManualAxisType(varying={"i"})
  assert t.varying == frozenset({"i"}) and t.to_ct_mat() == t
  assert isinstance(hlox.typeof(1.0), core.AbstractValue)
  assert core.max_dim(3, 5) == 5 and core.min_dim(3, 5) == 3

  seen = []

  def g(x):
    with core.eval_context():  # concrete while jit traces
      seen.append(type(jnp.ones(2) * 2))
    with core.ensure_compile_time_eval():
      seen.append(type(jnp.ones(2) + 1))
    return x + 1

  hlox.jit(g)(1.0)
  assert all(t is type(jnp.ones(1)) for t in seen)


_JAX_ERRORS = ["ConcretizationTypeError", "JAXIndexError", "JAXTypeError", "KeyReuseError",
               "NonConcreteBooleanIndexError", "TracerArrayConversionError",
               "TracerBoolConversionError", "TracerIntegerConversionError",
               "UnexpectedTracerError"]


class _FakeTracer(hlox.core.Tracer):
  """A tracer type written against JAX's constructor (``Tracer(trace, aval)``)."""

  def __init__(self, trace):
    super().__init__(trace, None)


@pytest.mark.parametrize("name", _JAX_ERRORS)
def test_jax_error_classes_take_one_argument_and_point_to_the_errors_page(name):
  cls = getattr(errors, name)
  err = cls(_FakeTracer(None))
  see = f"\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.{name}"
  assert str(err).endswith(see) and str(err).count("See https://") == 1
  if name in ("JAXTypeError", "JAXIndexError", "UnexpectedTracerError", "KeyReuseError"):
    # A message gets the line once, also when the error is built again from its text (as
    # unpickling does).
    assert str(cls("boom")) == "boom" + see
    assert str(cls(str(cls("boom")))) == "boom" + see


def test_tracer_subclass_with_jax_constructor_has_its_aval():
  aval = hlox.core.ShapedArray((2,), np.float32)

  class Mine(hlox.core.Tracer):
    def __init__(self, trace):
      super().__init__(trace, aval)

  assert Mine(None).aval is aval and Mine(None).shape == (2,)

  class Bare(hlox.core.Tracer):
    def __init__(self):
      pass

  with pytest.raises(NotImplementedError, match="Bare has no aval"):
    Bare().aval


def test_leaked_tracer_error_ends_with_the_errors_page():
  leaked = []
  hlox.jit(lambda x: leaked.append(x) or x)(1.)
  with pytest.raises(errors.UnexpectedTracerError) as e:
    leaked[0] + 1
  assert ("\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError"
          in str(e.value))


@pytest.mark.jax_oracle
def test_error_texts_match_jax():
  pytest.importorskip("jax")
  src = ("for name in ['ConcretizationTypeError', 'TracerArrayConversionError', "
         "'TracerBoolConversionError', 'TracerIntegerConversionError', "
         "'UnexpectedTracerError', 'KeyReuseError', 'JAXTypeError', 'JAXIndexError']:\n"
         "  class T(m.core.Tracer):\n"
         "    def __init__(self):\n"
         "      super().__init__(None, None)\n"
         "    def __repr__(self):\n"
         "      return 'T'\n"
         "  print(repr(str(getattr(m.errors, name)(T()))))\n")
  assert printed_here(src) == printed_in_jax({"errors": src})["errors"]

"""JAX's public names in ``hlox.errors``, ``hlox.debug``, ``hlox.sharding``, ``hlox.core``
and ``hlox.lax`` that are thin over existing machinery: their classes, what they compute."""
from __future__ import annotations

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import errors


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

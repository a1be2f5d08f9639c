"""Elementwise NumPy functions (ufuncs) written on ``lax``, with JAX's dtype promotion."""
from __future__ import annotations

from hlox import lax
from hlox.numpy.util import promote_args, promote_args_inexact

__all__ = ["add", "subtract", "multiply", "negative", "sin", "cos", "exp", "log", "tanh",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def add(x, y, /):
  """Elementwise ``x + y`` with NumPy broadcasting and promotion."""
  return lax.add(*promote_args("add", x, y))


def subtract(x, y, /):
  return lax.sub(*promote_args("subtract", x, y))


def multiply(x, y, /):
  return lax.mul(*promote_args("multiply", x, y))


def negative(x, /):
  return lax.neg(*promote_args("negative", x))


def sin(x, /):
  return lax.sin(*promote_args_inexact("sin", x))


def cos(x, /):
  return lax.cos(*promote_args_inexact("cos", x))


def exp(x, /):
  return lax.exp(*promote_args_inexact("exp", x))


def log(x, /):
  return lax.log(*promote_args_inexact("log", x))


def tanh(x, /):
  return lax.tanh(*promote_args_inexact("tanh", x))


def equal(x, y, /):
  return lax.eq(*promote_args("equal", x, y))


def not_equal(x, y, /):
  return lax.ne(*promote_args("not_equal", x, y))


def less(x, y, /):
  return lax.lt(*promote_args("less", x, y))


def less_equal(x, y, /):
  return lax.le(*promote_args("less_equal", x, y))


def greater(x, y, /):
  return lax.gt(*promote_args("greater", x, y))


def greater_equal(x, y, /):
  return lax.ge(*promote_args("greater_equal", x, y))

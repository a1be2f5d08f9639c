r"""``hlox.experimental.jet`` (JAX's ``jax.experimental.jet``): Taylor-mode automatic
differentiation, higher-order derivatives in one pass instead of nested ``jvp``\ s.

Given a curve through the inputs by its Taylor coefficients (``primals`` and, per input,
``series``: the derivatives of order 1..K along the curve), ``jet(f, primals, series)``
returns ``f``'s value and the derivatives of order 1..K of ``f`` along that curve, by pushing
truncated Taylor polynomials through each primitive.

The machinery is ``hlox/interpreters/jet.py`` (the trace and the rule table ``jet_rules``);
the rules sit beside the primitives (``lax/taylor.py`` for the arithmetic, shape and
reduction primitives; ``lax/call.py``, ``checkpoint.py`` and ``custom_derivatives.py`` for
the call primitives).
"""
from __future__ import annotations

import functools
from typing import Callable

from hlox import numpy as jnp
from hlox import _tree_transform as tree_util
from hlox.core.traceback_util import api_boundary
from hlox.interpreters.jet import (JetTrace, JetTracer, ZeroSeries, ZeroTerm, deflinear,
                                   defzero, jet_flat, jet_rules, linear_prop, zero_prop,
                                   zero_series, zero_term)
from hlox.lax import elementwise as _ew
from hlox.lax import taylor as _taylor
from hlox.lax.taylor import def_comp, def_deriv, deriv_prop

__all__ = ["JetTrace", "JetTracer", "ZeroSeries", "ZeroTerm", "call_param_updaters",
           "def_comp", "def_deriv", "deflinear", "defzero", "deriv_prop", "fact", "jet",
           "jet2", "jet_rules", "linear_prop", "zero_prop", "zero_series", "zero_term"]

# JAX's table of parameter updaters for call primitives under jet; hlox's call rules build
# their parameters themselves, so it stays empty (kept for code that registers into it).
call_param_updaters: dict = {}


# logistic's rule, which JAX's own tests call directly by this name.
_logistic_taylor = _taylor._logistic_taylor


def fact(n):
  """``n!`` as a float array (``exp(lgamma(n + 1))``), also for non-integer ``n``."""
  return _ew.exp(_ew.lgamma(n + 1.))


@api_boundary
def jet(fun: Callable, primals, series, factorial_scaled: bool = True, **_):
  r"""Taylor-mode higher-order differentiation of ``fun`` at ``primals`` along a curve.

  Args:
    fun: a function of arrays (positional arguments) returning an array or a pytree of
      arrays.
    primals: a tuple or list of the arguments (arrays or scalars, not pytrees).
    series: one sequence per argument of its Taylor terms of order 1..K (all of the same
      length K, the order of the result).
    factorial_scaled: with True (the default) the k-th term in and out is a k-th derivative
      along the curve (the coefficient times k!); with False the terms are the plain
      polynomial coefficients.

  Returns:
    ``(primals_out, series_out)``: ``fun(*primals)``, and for each of its outputs the list
    of its K terms (in ``fun``'s output structure), a truncated Taylor polynomial of
    ``fun`` along the curve. For example, with ``h(z) = z ** 3`` at ``x = 0.5``,
    ``jet(jnp.sin, (h0,), ((h1, h2),))`` gives ``sin(h0)``, ``cos(h0) h1`` and
    ``-sin(h0) h1 ** 2 + cos(h0) h2`` (Faà di Bruno's formula), where ``h0, h1, h2`` are
    ``h`` and its first two derivatives at ``x``.
  """
  try:
    order, = set(map(len, series))
  except ValueError:
    raise ValueError("jet terms have inconsistent lengths for different arguments") from None
  for i, (x, terms) in enumerate(zip(primals, series)):
    if not tree_util.treedef_is_leaf(tree_util.tree_structure(x)):
      raise ValueError(f"primal value at position {i} is not an array")
    for j, t in enumerate(terms):
      if not tree_util.treedef_is_leaf(tree_util.tree_structure(t)):
        raise ValueError(f"term {j} for argument {i} is not an array")

  pairs = list(zip(primals, series))
  primals = [p for p, _ in pairs]
  series = [list(s) for _, s in pairs]
  if factorial_scaled:
    series = [[_unscale(t, k) for k, t in enumerate(terms)] for terms in series]

  out_tree = []

  def flat_fun(*args):
    leaves, tree = tree_util.tree_flatten(fun(*args))
    out_tree.append(tree)
    return leaves

  out_primals, out_series = jet_flat(flat_fun, primals, series, order)
  out_series = [[jnp.zeros_like(p)] * order if s is zero_series else s
                for p, s in zip(out_primals, out_series)]
  if factorial_scaled:
    out_series = [[_rescale(t, k) for k, t in enumerate(terms)] for terms in out_series]
  return (tree_util.tree_unflatten(out_tree[0], out_primals),
          tree_util.tree_unflatten(out_tree[0], out_series))


def _unscale(term, k):
  # Order k + 1's derivative to its polynomial coefficient.
  return term if term is zero_term else jnp.true_divide(term, fact(k + 1))


def _rescale(term, k):
  return term if term is zero_term else jnp.multiply(term, fact(k + 1))


jet2 = functools.partial(jet, factorial_scaled=False)

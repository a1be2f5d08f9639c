"""Taylor-mode (``jet``) rules of lax's arithmetic, shape, indexing and reduction primitives.

A rule maps the coefficients ``u = [x, u1, ..., uK]`` of each operand's truncated Taylor
series (not factorial-scaled) to the result's. Most rules are one of a few kinds:
  - locally constant results (comparisons, rounding): zero series (``defzero``);
  - linear primitives (shapes, sums, ``add``): applied to each coefficient (``deflinear``);
  - bilinear ones (``mul``, ``dot_general``, convolution): a Cauchy product;
  - smooth unary functions: a recurrence from the ODE the function satisfies (``exp``:
    v' = v u'; ``log``: u v' = u'; ...), or, given the derivative as a composition
    (``def_deriv``), v' = f'(u) u' with f'(u)'s series from a nested jet;
  - the rest as compositions of primitives that have rules (``def_comp``).

Loops and branches (``scan``, ``while``, ``cond``; JAX's jet has no rules for them) carry
their bodies' jets. The call primitives' rules sit beside them (``call.py``,
``checkpoint.py``, ``custom_derivatives.py``). This room sits at the bottom of lax's: it
needs ``associative_scan`` and the control-flow primitives.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from hlox.cache import memoize_derived
from hlox.core.jaxpr import convert_constvars, eval_jaxpr, trace_to_jaxpr
from hlox.core.tracer import get_aval
from hlox.interpreters.jet import (deflinear, defzero, instantiate_series, jet_flat,
                                   jet_jaxpr, jet_rules, zero_series)
from hlox.lax import ad_util as _ad_util
from hlox.lax import base as _base
from hlox.lax import control_flow as _cf
from hlox.lax.convolution import conv_general_dilated_p
from hlox.lax import cumulative as _cum
from hlox.lax.dot import dot_general_p
from hlox.lax import elementwise as _ew
from hlox.lax import indexing as _idx
from hlox.lax import reductions as _red
from hlox.lax import shapes as _shapes
from hlox.lax import sharding_constraint as _sc
from hlox.lax import windowed as _win
from hlox.lax.elementwise import _const, add, div, mul, sub
from hlox.lax.fft import fft_p

__all__ = ["def_comp", "def_deriv", "deriv_prop", "jet_of"]


# --- helpers -----------------------------------------------------------------------------

def _sum(xs):
  return functools.reduce(add, xs)


def _scaled(c, x):
  """``c * x`` for a Python number ``c`` (skipping the multiplication by one)."""
  return x if c == 1 else mul(_const(x, c), x)


def jet_of(fun: Callable, primals, series):
  """The series of ``fun(*primals)`` (one result), by a nested jet of ``fun``: how a rule
  uses compositions of primitives that have rules. Returns (primal, instantiated terms)."""
  order = len(series[0])
  outs, out_series = jet_flat(lambda *xs: [fun(*xs)], primals, series, order)
  return outs[0], instantiate_series(outs[0], out_series[0], order)


def _chain(c, u, v0):
  """v' = c u' in coefficients: ``v_k = (1/k) sum_{j=1..k} j u_j c_{k-j}``, given the
  series ``c`` of the derivative (at least to order K-1) and ``u`` of the operand."""
  v = [v0]
  for k in range(1, len(u)):
    v.append(_scaled(1 / k, _sum(_scaled(j, mul(u[j], c[k - j])) for j in range(1, k + 1))))
  return v


def _broadcast_to(x, shape):
  """``x`` at the broadcast ``shape`` of an elementwise operation (scalars and size-1
  dimensions expand, as lax's binary operations broadcast)."""
  xshape = get_aval(x).shape
  if xshape == tuple(shape):
    return x
  dims = tuple(range(len(xshape))) if xshape else ()
  return _base.broadcast_in_dim(x, tuple(shape), dims)


def _out_shape(*xs):
  shapes = [get_aval(x).shape for x in xs]
  rank = max(len(s) for s in shapes)
  return tuple(max(s[i] for s in shapes if len(s) == rank) for i in range(rank))


# --- locally constant and linear primitives ----------------------------------------------

for _p in (_ew.le_p, _ew.lt_p, _ew.gt_p, _ew.ge_p, _ew.eq_p, _ew.ne_p, _ew.not_p,
           _ew.and_p, _ew.or_p, _ew.xor_p, _ew.floor_p, _ew.ceil_p, _ew.round_p,
           _ew.sign_p, _ew.is_finite_p, _ew.shift_left_p, _ew.shift_right_arithmetic_p,
           _ew.shift_right_logical_p, _ew.bitcast_convert_type_p, _ew.population_count_p,
           _ew.clz_p, _ad_util.stop_gradient_p, _red.argmax_p, _red.argmin_p,
           _red.reduce_and_p, _red.reduce_or_p, _red.reduce_xor_p):
  defzero(_p)

for _p in (_ew.neg_p, _ew.real_p, _ew.imag_p, _ew.conj_p, _ew.complex_p, _ew.add_p,
           _ew.sub_p, _ad_util.add_any_p, _base.convert_element_type_p,
           _base.broadcast_in_dim_p, _base.reshape_p, _base.transpose_p, _base.reduce_sum_p,
           _shapes.concatenate_p, _shapes.split_p, _shapes.stack_p, _shapes.unstack_p,
           _shapes.pad_p, _shapes.squeeze_p, _shapes.rev_p, _shapes.slice_p, _shapes.tile_p,
           _win.reduce_window_sum_p, fft_p, _ew.copy_p, _cum.cumsum_p,
           _sc.reshard_p, _sc.sharding_constraint_p):
  deflinear(_p)


def _index_operands_rule(prim, n_linear):
  """A primitive linear in its first ``n_linear`` operands whose others are indices."""
  def rule(primals, series, **params):
    rest = primals[n_linear:]
    primal_out = prim.bind(*primals, **params)
    terms = [prim.bind(*ts[:n_linear], *rest, **params) for ts in zip(*series)]
    return primal_out, terms
  return rule


jet_rules[_idx.dynamic_slice_p] = _index_operands_rule(_idx.dynamic_slice_p, 1)
jet_rules[_idx.dynamic_update_slice_p] = _index_operands_rule(_idx.dynamic_update_slice_p, 2)
jet_rules[_idx.gather_p] = _index_operands_rule(_idx.gather_p, 1)


def _scatter_linear_rule(prim):
  # operand, indices, updates: linear in operand and updates together.
  def rule(primals, series, **params):
    operand, indices, updates = primals
    primal_out = prim.bind(operand, indices, updates, **params)
    terms = [prim.bind(o, indices, u, **params) for o, _, u in zip(*series)]
    return primal_out, terms
  return rule


jet_rules[_idx.scatter_add_p] = _scatter_linear_rule(_idx.scatter_add_p)
jet_rules[_idx.scatter_sub_p] = _scatter_linear_rule(_idx.scatter_sub_p)


# --- products ----------------------------------------------------------------------------

def _bilinear_rule(prim):
  def rule(primals, series, **params):
    u = [primals[0], *series[0]]
    w = [primals[1], *series[1]]
    v = [_sum(prim.bind(u[j], w[k - j], **params) for j in range(k + 1))
         for k in range(len(u))]
    return v[0], v[1:]
  return rule


for _p in (_ew.mul_p, dot_general_p, conv_general_dilated_p):
  jet_rules[_p] = _bilinear_rule(_p)


def _div_rule(primals, series):
  # v w = u, solved for v one coefficient at a time.
  u = [primals[0], *series[0]]
  w = [primals[1], *series[1]]
  v = []
  for k in range(len(u)):
    acc = u[k] if k == 0 else sub(u[k], _sum(mul(v[j], w[k - j]) for j in range(k)))
    v.append(div(acc, w[0]))
  return v[0], v[1:]

jet_rules[_ew.div_p] = _div_rule


def _rem_rule(primals, series):
  # rem(x, y) = x - q y with the quotient q = trunc(x / y) locally constant.
  x, y = primals
  primal_out = _ew.rem(x, y)
  q = div(sub(x, primal_out), y)
  return primal_out, [sub(xs, mul(q, ys)) for xs, ys in zip(*series)]

jet_rules[_ew.rem_p] = _rem_rule


# --- exponentials, logarithms, powers ----------------------------------------------------

def _exp_rule(primals, series):
  x, = primals
  u = [x, *series[0]]
  v = [_ew.exp(x)]
  for k in range(1, len(u)):  # v' = v u'
    v.append(_scaled(1 / k, _sum(_scaled(j, mul(u[j], v[k - j])) for j in range(1, k + 1))))
  return v[0], v[1:]

jet_rules[_ew.exp_p] = _exp_rule


def _log_rule(primals, series):
  x, = primals
  u = [x, *series[0]]
  v = [_ew.log(x)]
  for k in range(1, len(u)):  # u v' = u'
    acc = u[k]
    if k > 1:
      acc = sub(acc, _scaled(1 / k, _sum(_scaled(j, mul(v[j], u[k - j]))
                                         for j in range(1, k))))
    v.append(div(acc, x))
  return v[0], v[1:]

jet_rules[_ew.log_p] = _log_rule


def _real_power_series(a, u, v0):
  """The series of ``u ** a`` for a constant real ``a``, from u v' = a u' v:
  ``v_k = (1 / (k u_0)) sum_{j=1..k} (a j - (k - j)) u_j v_{k-j}``."""
  v = [v0]
  for k in range(1, len(u)):
    acc = _sum(_scaled(a * j - (k - j), mul(u[j], v[k - j])) for j in range(1, k + 1))
    v.append(div(_scaled(1 / k, acc), u[0]))
  return v


def _real_power_rule(a, fun):
  def rule(primals, series):
    x, = primals
    v = _real_power_series(a, [x, *series[0]], fun(x))
    return v[0], v[1:]
  return rule


jet_rules[_ew.sqrt_p] = _real_power_rule(0.5, _ew.sqrt)
jet_rules[_ew.rsqrt_p] = _real_power_rule(-0.5, _ew.rsqrt)
jet_rules[_ew.cbrt_p] = _real_power_rule(1 / 3, _ew.cbrt)


def _pow_rule(primals, series):
  # x ** y = exp(y log x): the exponential's recurrence over the series of y log x.
  x, y = primals
  _, s = jet_of(lambda a, b: mul(b, _ew.log(a)), primals, series)
  u = [None, *s]
  v = [_ew.pow(x, y)]
  for k in range(1, len(u)):
    v.append(_scaled(1 / k, _sum(_scaled(j, mul(u[j], v[k - j])) for j in range(1, k + 1))))
  return v[0], v[1:]

jet_rules[_ew.pow_p] = _pow_rule


def _power_by_squaring(x, n: int):
  if n < 0:
    return _power_by_squaring(div(_const(x, 1), x), -n)
  result = None
  while n:
    if n & 1:
      result = x if result is None else mul(result, x)
    n >>= 1
    if n:
      x = mul(x, x)
  return result


def _integer_pow_rule(primals, series, *, y):
  x, = primals
  primal_out = _ew.integer_pow(x, y)
  if y == 0:
    return primal_out, zero_series
  _, terms = jet_of(lambda a: _power_by_squaring(a, y), primals, series)
  return primal_out, terms

jet_rules[_ew.integer_pow_p] = _integer_pow_rule


# --- trigonometric and hyperbolic --------------------------------------------------------

def _sin_cos_series(sign, sin, cos, x, terms):
  """The series of (sin u, cos u) (``sign=-1``) or (sinh u, cosh u) (``sign=1``):
  s' = c u', c' = sign s u'."""
  u = [x, *terms]
  s, c = [sin(x)], [cos(x)]
  for k in range(1, len(u)):
    s.append(_scaled(1 / k, _sum(_scaled(j, mul(u[j], c[k - j])) for j in range(1, k + 1))))
    c.append(_scaled(sign / k, _sum(_scaled(j, mul(u[j], s[k - j]))
                                    for j in range(1, k + 1))))
  return s, c


def _sin_cos_rule(sign, sin, cos, which):
  def rule(primals, series):
    pair = _sin_cos_series(sign, sin, cos, primals[0], series[0])
    v = pair[which]
    return v[0], v[1:]
  return rule


jet_rules[_ew.sin_p] = _sin_cos_rule(-1, _ew.sin, _ew.cos, 0)
jet_rules[_ew.cos_p] = _sin_cos_rule(-1, _ew.sin, _ew.cos, 1)
jet_rules[_ew.sinh_p] = _sin_cos_rule(1, _ew.sinh, _ew.cosh, 0)
jet_rules[_ew.cosh_p] = _sin_cos_rule(1, _ew.sinh, _ew.cosh, 1)


def _logistic_series(x, terms):
  """The series of logistic(u), from s' = e u' with e = s (1 - s), whose coefficients are
  ``e_k = (1 - s_0) s_k - sum_{j=1..k} s_j s_{k-j}``: only products of the logistic's own
  coefficients, which stay finite for large |u| (exp(u) would overflow)."""
  u = [x, *terms]
  s = [_ew.logistic(x)]
  one_minus_s0 = sub(_const(s[0], 1), s[0])
  e = [mul(s[0], one_minus_s0)]
  for k in range(1, len(u)):
    s.append(_scaled(1 / k, _sum(_scaled(j, mul(u[j], e[k - j])) for j in range(1, k + 1))))
    e.append(sub(mul(one_minus_s0, s[k]), _sum(mul(s[j], s[k - j]) for j in range(1, k + 1))))
  return s


def _logistic_taylor(primals, series, **_):
  """The jet rule of ``logistic``: (primal, terms) for one operand's series."""
  s = _logistic_series(primals[0], list(series[0]))
  return s[0], s[1:]

jet_rules[_ew.logistic_p] = _logistic_taylor


def _tanh_rule(primals, series):
  # tanh(u) = 2 logistic(2u) - 1.
  x, = primals
  s = _logistic_series(_scaled(2, x), [_scaled(2, t) for t in series[0]])
  return _ew.tanh(x), [_scaled(2, t) for t in s[1:]]

jet_rules[_ew.tanh_p] = _tanh_rule


def deriv_prop(prim, deriv, primals, series):
  """The rule of a unary ``prim`` from its derivative ``deriv`` (a composition of
  primitives with rules): v' = deriv(u) u'."""
  x, = primals
  c0, cs = jet_of(deriv, primals, series)
  v = _chain([c0, *cs], [x, *series[0]], prim.bind(x))
  return v[0], v[1:]


def def_deriv(prim, deriv: Callable) -> None:
  """Register ``prim``'s jet rule given its derivative as a function of its operand."""
  jet_rules[prim] = lambda primals, series: deriv_prop(prim, deriv, primals, series)


def_deriv(_ew.erf_p, lambda x: mul(_const(x, 2 / np.sqrt(np.pi)),
                                   _ew.exp(_ew.neg(_ew.square(x)))))
def_deriv(_ew.atan_p, lambda x: div(_const(x, 1), add(_const(x, 1), _ew.square(x))))
def_deriv(_ew.asin_p, lambda x: _ew.rsqrt(sub(_const(x, 1), _ew.square(x))))
def_deriv(_ew.acos_p, lambda x: _ew.neg(_ew.rsqrt(sub(_const(x, 1), _ew.square(x)))))


def def_comp(prim, comp: Callable) -> None:
  """Register ``prim``'s jet rule as that of the composition ``comp`` of primitives with
  rules (the primal itself is computed by ``prim``)."""
  def rule(primals, series, **params):
    _, terms = jet_of(comp, primals, series)
    return prim.bind(*primals, **params), terms
  jet_rules[prim] = rule


def_comp(_ew.expm1_p, lambda x: sub(_ew.exp(x), _const(x, 1)))
def_comp(_ew.exp2_p, lambda x: _ew.exp(mul(x, _const(x, np.log(2)))))
def_comp(_ew.log1p_p, lambda x: _ew.log(add(x, _const(x, 1))))
def_comp(_ew.square_p, lambda x: mul(x, x))
def_comp(_ew.tan_p, lambda x: div(_ew.sin(x), _ew.cos(x)))
def_comp(_ew.asinh_p, lambda x: _ew.log(add(x, _ew.sqrt(add(_ew.square(x), _const(x, 1))))))
def_comp(_ew.acosh_p, lambda x: _ew.log(add(x, _ew.sqrt(sub(_ew.square(x), _const(x, 1))))))
def_comp(_ew.atanh_p, lambda x: mul(_const(x, 0.5), _ew.log(div(add(_const(x, 1), x),
                                                                 sub(_const(x, 1), x)))))
def_comp(_ew.erfc_p, lambda x: sub(_const(x, 1), _ew.erf(x)))
def_comp(_ew.clamp_p, lambda lo, x, hi: _ew.min(_ew.max(lo, x), hi))


def _erf_inv_rule(primals, series):
  # y = erf_inv(x) has y' = c x' with c = sqrt(pi)/2 exp(y^2): c's series needs y's, so
  # both are built one order at a time (c_k from y_0..y_k).
  x, = primals
  u = [x, *series[0]]
  scale = np.sqrt(np.pi) / 2
  y = [_ew.erf_inv(x)]
  sq = [_ew.square(y[0])]
  ex = [_ew.exp(sq[0])]
  c = [_scaled(scale, ex[0])]
  for k in range(1, len(u)):
    y.append(_scaled(1 / k, _sum(_scaled(j, mul(u[j], c[k - j])) for j in range(1, k + 1))))
    if k == len(u) - 1:
      break
    sq.append(_sum(mul(y[j], y[k - j]) for j in range(k + 1)))
    ex.append(_scaled(1 / k, _sum(_scaled(j, mul(sq[j], ex[k - j])) for j in range(1, k + 1))))
    c.append(_scaled(scale, ex[k]))
  return y[0], y[1:]

jet_rules[_ew.erf_inv_p] = _erf_inv_rule


def _atan2_rule(primals, series):
  # atan2(x, y) = atan(x / y) up to a locally constant multiple of pi.
  x, y = primals
  q0, qs = jet_of(div, primals, series)
  c0, cs = jet_of(lambda q: div(_const(q, 1), add(_const(q, 1), _ew.square(q))), [q0], [qs])
  v = _chain([c0, *cs], [q0, *qs], _ew.atan2(x, y))
  return v[0], v[1:]

jet_rules[_ew.atan2_p] = _atan2_rule


# --- piecewise: abs, select, max/min, reductions that choose -----------------------------

def _complex_abs(z):
  return _ew.sqrt(add(_ew.square(_ew.real(z)), _ew.square(_ew.imag(z))))


def _abs_rule(primals, series):
  x, = primals
  if np.issubdtype(get_aval(x).dtype, np.complexfloating):
    _, terms = jet_of(_complex_abs, primals, series)
    return _ew.abs(x), terms
  sign = _ew.select(_ew.lt(x, _const(x, 0)), _base.full_like(x, -1), _base.full_like(x, 1))
  return _ew.abs(x), [mul(sign, t) for t in series[0]]

jet_rules[_ew.abs_p] = _abs_rule


def _select_n_rule(primals, series):
  which, *cases = primals
  primal_out = _ew.select_n(which, *cases)
  return primal_out, [_ew.select_n(which, *ts[1:]) for ts in zip(*series)]

jet_rules[_ew.select_n_p] = _select_n_rule


def _minmax_rule(pick_first_cmp, op):
  # The series of the operand chosen; at ties, the mean of both (as the JVP's balanced
  # derivative does).
  def rule(primals, series):
    x, y = primals
    shape = _out_shape(x, y)
    x, y = _broadcast_to(x, shape), _broadcast_to(y, shape)
    first = pick_first_cmp(x, y)
    tie = _ew.eq(x, y)
    half = _const(x, 0.5)

    def choose(xs, ys):
      xs, ys = _broadcast_to(xs, shape), _broadcast_to(ys, shape)
      return _ew.select(tie, mul(half, add(xs, ys)), _ew.select(first, xs, ys))
    return op(x, y), [choose(xs, ys) for xs, ys in zip(*series)]
  return rule


jet_rules[_ew.max_p] = _minmax_rule(_ew.gt, _ew.max)
jet_rules[_ew.min_p] = _minmax_rule(_ew.lt, _ew.min)


def _chooser_reduction_rule(prim):
  # The series averaged over the positions that attain the extremum.
  def rule(primals, series, *, axes, **params):
    operand, = primals
    primal_out = prim.bind(operand, axes=axes, **params)
    shape = get_aval(operand).shape
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    hits = _base.convert_element_type(
        _ew.eq(operand, _base.broadcast_in_dim(primal_out, shape, kept)),
        get_aval(series[0][0]).dtype)
    counts = _base.reduce_sum(hits, axes)
    return primal_out, [div(_base.reduce_sum(mul(t, hits), axes), counts) for t in series[0]]
  return rule


jet_rules[_red.reduce_max_p] = _chooser_reduction_rule(_red.reduce_max_p)
jet_rules[_red.reduce_min_p] = _chooser_reduction_rule(_red.reduce_min_p)


def _logaddexp(a, b):
  big = _ew.max(a, b)
  return add(big, _ew.log1p(_ew.exp(_ew.neg(_ew.abs(sub(a, b))))))


def _cumulative_rule(combine, fun):
  # A parallel prefix scan of ``combine``: made of slices, pads and elementwise primitives,
  # which all have rules (the reduce_window a cumulative primitive lowers to has none).
  def rule(primals, series, *, axis, reverse):
    scan = functools.partial(_cf.associative_scan, combine, axis=axis, reverse=reverse)
    _, terms = jet_of(scan, primals, series)
    return fun(primals[0], axis=axis, reverse=reverse), terms
  return rule


jet_rules[_cum.cumprod_p] = _cumulative_rule(mul, _cum.cumprod)
jet_rules[_cum.cummax_p] = _cumulative_rule(_ew.max, _cum.cummax)
jet_rules[_cum.cummin_p] = _cumulative_rule(_ew.min, _cum.cummin)
jet_rules[_cum.cumlogsumexp_p] = _cumulative_rule(_logaddexp, _cum.cumlogsumexp)


# --- control flow (JAX's jet has no rules for these) -------------------------------------
# A body's jet is traced once per loop or branch (``jet_jaxpr``: every coefficient
# instantiated), so the loop carries each carried value's series beside it.

def _series_avals(avals):
  return tuple(a.update(weak_type=False) for a in avals)


def _as_series_of(terms, aval):
  # A series handed to a loop has its value's dtype (a select's boolean predicate may carry
  # float terms, which no rule reads).
  return [t if get_aval(t).dtype == aval.dtype else _base.convert_element_type(t, aval.dtype)
          for t in terms]


def _grouped_layout(groups, n: int, order: int) -> list:
  """Positions in ``jet_jaxpr``'s layout (n primals, then each one's ``order`` terms) of
  the layout that puts each group's terms right after the group's primals."""
  idx, start = [], 0
  for g in groups:
    idx += list(range(start, start + g))
    idx += [n + i * order + k for i in range(start, start + g) for k in range(order)]
    start += g
  return idx


def _grouped_jet(closed, order, series_avals, in_groups, out_groups):
  """The jet of ``closed`` with inputs and outputs in groups (consts, carry, xs...), each
  group's terms after its primals; consts made leading invars: (jaxpr, consts)."""
  jet = jet_jaxpr(closed, order, series_avals)
  in_idx = _grouped_layout(in_groups, len(closed.in_avals), order)
  out_idx = _grouped_layout(out_groups, len(closed.out_avals), order)

  def fun(*args):
    ordered = [None] * len(args)
    for pos, i in enumerate(in_idx):
      ordered[i] = args[pos]
    outs = eval_jaxpr(jet.jaxpr, jet.consts, *ordered)
    return [outs[i] for i in out_idx]
  avals = [jet.in_avals[i] for i in in_idx]
  return convert_constvars(trace_to_jaxpr(fun, avals, "jet", "jet"))


def _with_terms(primals, series, avals) -> list:
  """A group of operands followed by each one's terms (the grouped jets' layout)."""
  return [*primals, *[t for s, a in zip(series, avals) for t in _as_series_of(s, a)]]


def _scan_rule(primals, series, *, jaxpr, num_consts, num_carry, **params):
  order = len(series[0])
  n_xs = len(primals) - num_consts - num_carry
  n_ys = len(jaxpr.out_avals) - num_carry
  avals = _series_avals(jaxpr.in_avals)
  body, consts = memoize_derived(
      ("jet", jaxpr, order, avals, num_consts, num_carry),
      lambda: _grouped_jet(jaxpr, order, avals, [num_consts, num_carry, n_xs],
                           [num_carry, n_ys]))
  groups = zip(_cf._split(primals, num_consts, num_carry), _cf._split(series, num_consts,
                                                                      num_carry),
               _cf._split(avals, num_consts, num_carry))
  args = [x for ps, ss, avs in groups for x in _with_terms(ps, ss, avs)]
  outs = _cf.scan_p.bind(*consts, *args, jaxpr=body,
                         num_consts=len(consts) + num_consts * (1 + order),
                         num_carry=num_carry * (1 + order), **params)
  carry, carry_s, ys, ys_s = _cf._split(outs, num_carry, num_carry * order, n_ys)
  terms = [carry_s[i * order:(i + 1) * order] for i in range(num_carry)]
  terms += [ys_s[i * order:(i + 1) * order] for i in range(n_ys)]
  return carry + ys, terms

jet_rules[_cf.scan_p] = _scan_rule


def _while_rule(primals, series, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # The predicate reads the primals only; the body carries the terms.
  order = len(series[0])
  _, bc, init = _cf._split(primals, cond_nconsts, body_nconsts)
  _, bc_s, init_s = _cf._split(series, cond_nconsts, body_nconsts)
  avals = _series_avals(body_jaxpr.in_avals)
  n_carry = len(init)

  def make():
    body, consts = _grouped_jet(body_jaxpr, order, avals, [body_nconsts, n_carry], [n_carry])
    extra = _cf._fresh([a for a in avals[body_nconsts:] for _ in range(order)])
    cond = _cf._with_invars(cond_jaxpr, cond_jaxpr.jaxpr.invars + extra)
    return body, consts, cond
  body, consts, cond = memoize_derived(
      ("jet", cond_jaxpr, body_jaxpr, order, avals, body_nconsts), make)
  b_avals, c_avals = avals[:body_nconsts], avals[body_nconsts:]
  outs = _cf.while_p.bind(*primals[:cond_nconsts], *consts, *_with_terms(bc, bc_s, b_avals),
                          *_with_terms(init, init_s, c_avals), cond_jaxpr=cond,
                          body_jaxpr=body, cond_nconsts=cond_nconsts,
                          body_nconsts=len(consts) + body_nconsts * (1 + order))
  flat = outs[n_carry:]
  return outs[:n_carry], [flat[i * order:(i + 1) * order] for i in range(n_carry)]

jet_rules[_cf.while_p] = _while_rule


def _cond_rule(primals, series, *, branches):
  # The branch index is locally constant; every branch gets the operands' terms.
  index, *ops = primals
  order = len(series[0])
  avals = _series_avals(branches[0].in_avals)

  def make():
    return _cf._hoist_tuple(tuple(jet_jaxpr(br, order, avals) for br in branches))
  new_branches, consts = memoize_derived(("jet", branches, order, avals), make)
  n_out = len(branches[0].out_avals)
  outs = _cf.cond_p.bind(index, *consts, *_with_terms(ops, series[1:], avals),
                         branches=new_branches)
  flat = outs[n_out:]
  return outs[:n_out], [flat[i * order:(i + 1) * order] for i in range(n_out)]

jet_rules[_cf.cond_p] = _cond_rule

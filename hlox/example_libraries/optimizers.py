"""``hlox.example_libraries.optimizers``: JAX's teaching optimizers
(``jax.example_libraries.optimizers``).

An optimizer is a triple of functions ``(init_fun, update_fun, get_params)``:

- ``init_fun(params)`` makes the optimizer state from a pytree of parameters;
- ``update_fun(step, grads, opt_state)`` gives the next state from the step index and a
  gradient pytree shaped like the parameters;
- ``get_params(opt_state)`` reads the parameters back out (``get_params(init_fun(p)) == p``).

Each optimizer here is written for one array at a time and lifted to pytrees by the
``optimizer`` decorator; its state is an ``OptimizerState`` (a pytree), so it can be passed
through ``jit`` and the other transformations. Step sizes may be numbers or schedules
(functions of the step index).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from hlox import numpy as jnp
from hlox import _tree_transform as tree_util

# OptimizerState is a pytree node whose only child is ``packed_state`` (the list of each
# parameter's flattened state); the two tree structures are static auxiliary data, so jit
# keys on them and they never become tracers.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Array = Any
Params = Any     # a pytree of arrays
State = Any      # one parameter's optimizer state (itself a pytree)
Updates = Params  # gradients have the parameters' structure
InitFn = Callable[[Params], OptimizerState]
Step = int
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
  """The ``(init_fn, update_fn, params_fn)`` triple an optimizer constructor returns."""
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


def _check_same_length(a, b):
  if len(a) != len(b):
    raise ValueError(f"length mismatch: {len(a)} != {len(b)}")


def _flatten_states(states):
  flats = [tree_util.tree_flatten(s) for s in states]
  return [f[0] for f in flats], [f[1] for f in flats]


def _unflatten_states(subtrees, states_flat):
  _check_same_length(subtrees, states_flat)
  return [tree_util.tree_unflatten(t, leaves) for t, leaves in zip(subtrees, states_flat)]


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]
              ) -> Callable[..., Optimizer]:
  """Lifts an optimizer written for single arrays to pytrees of parameters.

  ``opt_maker(*args, **kwargs)`` returns ``(init, update, get_params)`` working on one array
  (``init(x0) -> state``, ``update(i, g, state) -> state``, ``get_params(state) -> x``, where
  a state is any pytree). The decorated constructor returns an ``Optimizer`` whose functions
  take pytrees of arrays and whose state is an ``OptimizerState``: the parameters' tree
  structure, each leaf's state structure, and the list of each leaf's flattened state.
  """
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, tree = tree_util.tree_flatten(x0_tree)
      states_flat, subtrees = _flatten_states([init(x0) for x0 in x0_flat])
      return OptimizerState(states_flat, tree, subtrees)

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, tree, subtrees = opt_state
      grad_flat, grad_tree_def = tree_util.tree_flatten(grad_tree)
      if grad_tree_def != tree:
        raise TypeError("optimizer update function was passed a gradient tree that did not "
                        "match the parameter tree structure with which it was initialized: "
                        f"parameter tree {tree} and grad tree {grad_tree_def}.")
      states = _unflatten_states(subtrees, states_flat)
      _check_same_length(grad_flat, states)
      step = partial(update, i)
      new_states = [step(g, s) for g, s in zip(grad_flat, states)]
      new_flat, new_subtrees = _flatten_states(new_states)
      for before, after in zip(subtrees, new_subtrees):
        if after != before:
          raise TypeError("optimizer update function produced an output structure that did "
                          f"not match its input structure: input {before} and output "
                          f"{after}.")
      return OptimizerState(new_flat, tree, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, tree, subtrees = opt_state
      states = _unflatten_states(subtrees, states_flat)
      return tree_util.tree_unflatten(tree, [get_params(s) for s in states])

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


# --- optimizers -----------------------------------------------------------------------------

def _first(state):
  return state[0]


@optimizer
def sgd(step_size):
  """Stochastic gradient descent: ``x <- x - step_size(i) * g``.

  Args:
    step_size: a positive number, or a schedule mapping the step index to one.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0

  def update(i, g, x):
    return x - step_size(i) * g

  def get_params(x):
    return x
  return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size: Schedule, mass: float):
  """Gradient descent with momentum: ``v <- mass * v + g; x <- x - step_size(i) * v``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity
  return init, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
  """Gradient descent with Nesterov momentum: ``v <- mass * v + g;
  x <- x - step_size(i) * (mass * v + g)``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity
  return init, update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad (Duchi, Hazan and Singer, 2011) with momentum on the scaled gradient.

  Args:
    step_size: a positive number, or a schedule.
    momentum: the weight of the previous scaled step (0.9).
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    # Entries that never saw a gradient take no step (instead of 0/0).
    inv_root = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
    m = (1. - momentum) * (g * inv_root) + momentum * m
    return x - step_size(i) * m, g_sq, m
  return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """RMSProp: divides the gradient by a running root-mean-square of past gradients.

  Args:
    step_size: a positive number, or a schedule.
    gamma: decay of the running mean of squared gradients.
    eps: added under the square root.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
  return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp whose scaled steps are accumulated with momentum.

  Args:
    step_size: a positive number, or a schedule.
    gamma: decay of the running mean of squared gradients.
    eps: added under the square root.
    momentum: decay of the accumulated step.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom
  return init, update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam (Kingma and Ba, 2015).

  Args:
    step_size: a positive number, or a schedule.
    b1: decay of the first-moment (mean) estimate, 0.9.
    b2: decay of the second-moment estimate, 0.999.
    eps: added to the root of the second moment, 1e-8.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    # Bias corrections, with the betas in the state's dtype (not float64 under x64 when the
    # parameters are float32).
    m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v
  return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """AdaMax, Adam with an infinity norm in place of the second moment.

  Args:
    step_size: a positive number, or a schedule.
    b1: decay of the first-moment estimate, 0.9.
    b2: decay of the weighted infinity norm, 0.999.
    eps: added to the norm, 1e-8.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    corrected_step = step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    return x - corrected_step * m / (u + eps), m, u
  return init, update, _first


@optimizer
def sm3(step_size, momentum=0.9):
  """SM3 (Anil, Gupta, Koren and Singer, 2019): Adagrad whose accumulator is covered by one
  vector per axis, so its memory is the sum, not the product, of the dimensions.

  Args:
    step_size: a positive number, or a schedule.
    momentum: the weight of the previous scaled step (0.9).
  """
  step_size = make_schedule(step_size)

  def along_axis(ndim, v, axis):
    # v (one entry per index of ``axis``) as an array broadcasting against ndim-d values;
    # a scalar gradient (ndim 0) against its 1-d cover gives the cover itself.
    index = [None] * ndim
    index[axis:axis + 1] = [slice(None)]
    return v[tuple(index)]

  def init(x0):
    shape = x0.shape
    x0 = jnp.atleast_1d(x0)
    covers = [jnp.zeros(size, dtype=x0.dtype) for size in x0.shape]
    return x0, jnp.zeros_like(x0), covers, shape

  def update(i, g, state):
    x, m, covers, shape = state
    bound = functools.reduce(jnp.minimum,
                             [along_axis(g.ndim, v, a) for a, v in enumerate(covers)])
    accum = bound + jnp.square(g)
    inv_root = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
    m = (1. - momentum) * (g * inv_root) + momentum * m
    x = x - step_size(i) * m
    covers = [accum.max(tuple(d for d in range(x.ndim) if d != a)) for a in range(x.ndim)]
    return x, m, covers, shape

  def get_params(state):
    x, _, _, shape = state
    return x.reshape(shape)
  return init, update, get_params


# --- step-size schedules --------------------------------------------------------------------

def constant(step_size) -> Schedule:
  """The schedule that is ``step_size`` at every step."""
  def schedule(i):
    return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
  """``step_size * decay_rate ** (i / decay_steps)``."""
  def schedule(i):
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
  """``step_size / (1 + decay_rate * i / decay_steps)``, with ``i / decay_steps`` floored
  when ``staircase``."""
  if staircase:
    def schedule(i):
      return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  else:
    def schedule(i):
      return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
  """From ``step_size`` to ``final_step_size`` over ``decay_steps`` steps along
  ``(1 - i / decay_steps) ** power``, then constant."""
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    fraction_left = (1 - step_num / decay_steps) ** power
    return fraction_left * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any):
  """``values[k]`` for steps ``i`` with exactly ``k`` boundaries below ``i``
  (``len(values) == len(boundaries) + 1``)."""
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if boundaries.shape[0] != values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")

  def schedule(i):
    return values[jnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
  """A schedule as is, or a scalar as the constant schedule; anything else is a TypeError."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# --- utilities ------------------------------------------------------------------------------

def l2_norm(tree):
  """The l2 norm of all the arrays of a pytree taken together (e.g. for weight decay)."""
  leaves = tree_util.tree_leaves(tree)
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
  """Scales a gradient pytree down so that its ``l2_norm`` is at most ``max_norm``."""
  norm = l2_norm(grad_tree)

  def clip(g):
    return jnp.where(norm < max_norm, g, g * (max_norm / norm))
  return tree_util.tree_map(clip, grad_tree)


# --- (de)serialization ----------------------------------------------------------------------

class JoinPoint:
  """A leaf of the outer (parameter) pytree holding one parameter's state pytree, marking
  where the two trees join in ``unpack_optimizer_state``'s result."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):
    # Serializers that walk containers see the state inside.
    yield self.subtree


def unpack_optimizer_state(opt_state):
  """An ``OptimizerState`` as a plain pytree: the parameters' structure with a ``JoinPoint``
  holding each parameter's state in place of the parameter (for saving to disk)."""
  states_flat, tree_def, subtree_defs = opt_state
  states = _unflatten_states(subtree_defs, states_flat)
  return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in states])


def pack_optimizer_state(marked_pytree):
  """The inverse of ``unpack_optimizer_state``: an ``OptimizerState`` from a pytree whose
  leaves are ``JoinPoint``s."""
  joins, tree_def = tree_util.tree_flatten(marked_pytree)
  if not all(isinstance(j, JoinPoint) for j in joins):
    # JAX asserts here; the same exception class, with a message.
    raise AssertionError("pack_optimizer_state expects a pytree whose leaves are all JoinPoints "
                    "(as unpack_optimizer_state returns).")
  states_flat, subtree_defs = _flatten_states([j.subtree for j in joins])
  return OptimizerState(states_flat, tree_def, subtree_defs)

"""``jax.experimental.random``: a stateful generator whose state updates itself.

``stateful_rng(seed)`` gives a ``StatefulPRNG``: a typed PRNG key that never changes and a
counter held in a ``Ref``. Every draw folds the counter into the key and then increments the
counter through the reference, so repeated draws differ, also under ``jit`` (the counter is a
reference the compiled program reads and writes back) and ``vmap`` of a ``split`` generator.
It is a convenience over the explicit keys of ``hlox.random``, with the limits of references:
a generator cannot be returned from a transformed function or carried through a loop.
"""
from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence

import numpy as np

from hlox import dtypes, random, ref

from hlox import _tree_transform as tree_util
from hlox import numpy as jnp
from hlox.core.basearray import Array
from hlox.core.tracer import eval_trace, trace_ctx

__all__ = ["StatefulPRNG", "stateful_rng"]


def _shape_of_draw(size, *params) -> tuple:
  """The shape of a draw: ``size`` as a tuple, or the broadcast shape of the parameters."""
  if size is None:
    return tuple(np.broadcast_shapes(*(np.shape(p) for p in params)))
  if isinstance(size, (int, np.integer)):
    return (operator.index(size),)
  return tuple(operator.index(d) for d in size)


@tree_util.register_dataclass
@dataclasses.dataclass(frozen=True, slots=True)
class StatefulPRNG:
  """A random generator that updates its own state (make one with ``stateful_rng``).

  ``_base_key`` is a typed PRNG key; ``_counter`` an integer ``Ref`` counting the keys drawn.
  A pytree (the key and the counter are its leaves), so it can be passed into ``jit`` and
  ``vmap``; ``split`` gives a generator of independent children to map over."""
  _base_key: Array
  _counter: ref.Ref

  def __post_init__(self):
    if any(type(leaf) is object for leaf in tree_util.tree_leaves(self)):
      return  # a stand-in built by pytree machinery around placeholder leaves (vmap's axes)
    key = self._base_key
    if not (isinstance(key, Array) and dtypes.issubdtype(key.dtype, dtypes.prng_key)):
      raise ValueError(f"Expected base_key to be a typed PRNG key; got {key}")
    if not isinstance(self._counter, ref.Ref):
      raise ValueError(f"Expected counter to be a scalar integer ref; got {self._counter}")

  def key(self, shape: int | Sequence[int] = ()) -> Array:
    """A new key (``shape`` of them if given), independent of every earlier one; the
    generator's counter moves on by one."""
    if self._base_key.shape:
      raise ValueError("cannot operate on split stateful generator: vmap over it (each "
                       "mapped generator is unsplit) or use spawn() for a list")
    key = random.fold_in(self._base_key, ref.get(self._counter))
    ref.addupdate(self._counter, ..., 1)
    shape = _shape_of_draw(shape)
    return random.split(key, shape) if shape else key

  def random(self, size: int | Sequence[int] | None = None, dtype=float) -> Array:
    """Floats uniform on [0, 1), of shape ``size``."""
    return random.uniform(self.key(), shape=_shape_of_draw(size), dtype=dtype)

  def uniform(self, low=0, high=1, size: int | Sequence[int] | None = None, *,
              dtype=float) -> Array:
    """Floats uniform on [low, high); the shape is ``size`` or that of the bounds."""
    return random.uniform(self.key(), _shape_of_draw(size, low, high), minval=low,
                          maxval=high, dtype=dtype)

  def normal(self, loc=0, scale=1, size: int | Sequence[int] | None = None, *,
             dtype=float) -> Array:
    """Normal draws with mean ``loc`` and standard deviation ``scale``."""
    draw = random.normal(self.key(), _shape_of_draw(size, loc, scale), dtype)
    return (jnp.asarray(loc) + jnp.asarray(scale) * draw).astype(dtype)

  def integers(self, low, high=None, size: int | Sequence[int] | None = None, *,
               dtype=int) -> Array:
    """Integers uniform on [low, high) (on [0, low) when ``high`` is None)."""
    if high is None:
      low, high = 0, low
    return random.randint(self.key(), _shape_of_draw(size, low, high), minval=low,
                          maxval=high, dtype=dtype)

  def split(self, num: int | Sequence[int]) -> "StatefulPRNG":
    """One generator holding ``num`` independent children, to pass through ``vmap``."""
    return StatefulPRNG(self.key(num), ref.new_ref(jnp.zeros(num, dtype=int)))

  def spawn(self, n_children: int) -> list["StatefulPRNG"]:
    """A list of ``n_children`` independent generators."""
    return [type(self)(k, ref.new_ref(0)) for k in self.key(n_children)]


def stateful_rng(seed=None, *, impl=None) -> StatefulPRNG:
  """A ``StatefulPRNG`` seeded with ``seed`` (``impl`` names the PRNG implementation, as for
  ``random.key``). Without a seed, at top level only, NumPy's entropy source picks one."""
  if seed is None:
    if trace_ctx.trace is not eval_trace:
      raise TypeError("When used within transformed code, jax.experimental.random."
                      "stateful_rng() requires an explicit seed to be set.")
    seed = np.int64(np.random.SeedSequence().entropy & np.iinfo(np.int64).max)
  return StatefulPRNG(random.key(seed, impl=impl), ref.new_ref(0))

"""XLA's own random-number operations: ``rng_bit_generator`` (stateless, keyed bits from
``stablehlo.rng_bit_generator``) and ``rng_uniform`` (``stablehlo.rng``, stateful, for niche
uses). ``hlox.random`` (threefry2x32 on lax) is what programs should normally use.

The key of ``rng_bit_generator`` is a ``uint32[4]`` vector (as in JAX, so that it works
without x64); the lowering reinterprets it as the ``uint64[2]`` state that XLA's THREE_FRY and
PHILOX generators take. A ``uint64[2]`` key is accepted too.
"""
from __future__ import annotations

import enum
from functools import partial

import numpy as np

from hlox.core import dtypes, sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import base
from hlox.lax import shapes as _shapes
from hlox.lax.sharding_constraint import apply_out_sharding
from hlox.lax.utils import shape_str

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_bit_generator_p", "rng_uniform",
           "rng_uniform_p"]


class RandomAlgorithm(enum.IntEnum):
  """The bit generator behind ``rng_bit_generator``: the platform's default, Threefry or
  Philox (XLA's CPU backend implements both)."""

  RNG_DEFAULT = 0
  RNG_THREE_FRY = 1
  RNG_PHILOX = 2

  def __str__(self):
    return self.name


_ALGORITHM_NAMES = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                    RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                    RandomAlgorithm.RNG_PHILOX: "PHILOX"}
_BIT_DTYPES = tuple(np.dtype(d) for d in (np.uint8, np.uint16, np.uint32, np.uint64))


# --- rng_bit_generator -------------------------------------------------------------------

def _check_key(key):
  if not ((key.shape == (4,) and key.dtype == np.uint32)
          or (key.shape == (2,) and key.dtype == np.uint64)):
    raise TypeError(f"rng_bit_generator: key must be uint32[4] (or uint64[2]), got "
                    f"{key.str_short()}")


def _rng_bit_generator_abstract_eval(key, *, shape, dtype, algorithm):
  _check_key(key)
  return [ShapedArray(key.shape, key.dtype, key.weak_type), ShapedArray(shape, dtype)]


rng_bit_generator_p = Primitive("rng_bit_generator")
rng_bit_generator_p.multiple_results = True
rng_bit_generator_p.def_abstract_eval(_rng_bit_generator_abstract_eval)
rng_bit_generator_p.def_impl(partial(xla.apply_primitive, rng_bit_generator_p))


def _rng_bit_generator_lowering(ctx, key, *, shape, dtype, algorithm):
  key_aval = ctx.avals_in[0]
  u32, u64 = ir.IntegerType.get_unsigned(32), ir.IntegerType.get_unsigned(64)
  if key_aval.dtype == np.uint32:
    # uint32[4] -> uint32[2, 2] -> uint64[2]: each pair of words is one 64-bit state word.
    key = hlo.bitcast_convert(ir.RankedTensorType.get([2], u64),
                              hlo.reshape(ir.RankedTensorType.get([2, 2], u32), key))
  # XLA generates 8/16/32/64-bit unsigned words; other dtypes were rejected by the API.
  bits_type = ir.RankedTensorType.get(list(shape), xla.dtype_to_ir_type(dtype))
  op = hlo.RngBitGeneratorOp(key.type, bits_type,
                             hlo.RngAlgorithmAttr.get(_ALGORITHM_NAMES[algorithm]), key)
  new_key, bits = op.results
  if key_aval.dtype == np.uint32:
    new_key = hlo.reshape(ir.RankedTensorType.get([4], u32),
                          hlo.bitcast_convert(ir.RankedTensorType.get([2, 2], u32), new_key))
  return [new_key, bits]

xla.register_lowering(rng_bit_generator_p, _rng_bit_generator_lowering)
ad.defjvp_zero(rng_bit_generator_p)


def _rng_bit_generator_batch(vals, dims, *, shape, dtype, algorithm):
  # JAX's rule: XLA's op takes a single state, so the whole batch of bits is drawn from the
  # first key, and only that key is advanced. The keys' bits therefore differ from a loop
  # over the keys, but match JAX's (rbg keys under vmap give JAX's numbers).
  (keys,), (d,) = vals, dims
  keys = batching.moveaxis(keys, d, 0)
  size = get_aval(keys).shape[0]
  if size == 0:
    return [keys, base.full((0,) + shape, 0, dtype)], [0, 0]
  first = _shapes.squeeze(_shapes.slice(keys, (0, 0), (1,) + get_aval(keys).shape[1:]), (0,))
  new_key, bits = rng_bit_generator_p.bind(first, shape=(size,) + shape, dtype=dtype,
                                           algorithm=algorithm)
  rest = _shapes.slice(keys, (1, 0), get_aval(keys).shape)
  new_keys = _shapes.concatenate([_shapes.expand_dims(new_key, (0,)), rest], 0)
  return [new_keys, bits], [0, 0]

batching.primitive_batchers[rng_bit_generator_p] = _rng_bit_generator_batch


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT,
                      *, out_sharding=None):
  """Random bits from XLA's RngBitGenerator.

  Returns uniformly random unsigned integers of ``shape`` and ``dtype`` (uint8, uint16,
  uint32 or uint64) and the next key. ``key`` is a ``uint32[4]`` (or ``uint64[2]``) array;
  others raise ``TypeError``. The bits depend on the algorithm and, for
  ``RNG_DEFAULT``, on the platform: use ``hlox.random`` for reproducible streams.

  Args:
    key: the generator state, ``uint32[4]`` or ``uint64[2]``.
    shape: the output shape (static).
    dtype: an unsigned integer dtype.
    algorithm: a ``RandomAlgorithm`` (default ``RNG_DEFAULT``).
    out_sharding: keyword-only; optional sharding of the bits.

  Returns:
    A pair ``(new_key, bits)``.

  Examples:
    >>> new_key, bits = lax.rng_bit_generator(jnp.zeros(4, jnp.uint32), (2,))
    >>> new_key.shape, bits.shape, bits.dtype
    ((4,), (2,), dtype('uint32'))
  """
  shape = base._shape_tuple("rng_bit_generator", shape)
  dtype = np.dtype(dtype)
  if dtype not in _BIT_DTYPES:
    raise TypeError(f"rng_bit_generator: unsupported dtype {dtype.name}; expected one of "
                    "uint8, uint16, uint32, uint64")
  if dtypes.canonicalize_dtype(dtype) != dtype and not dtypes.explicit_64bit_allowed():
    raise TypeError(f"rng_bit_generator: dtype {dtype.name} requires x64 (enable_x64)")
  algorithm = RandomAlgorithm(algorithm)
  new_key, bits = rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm)
  return new_key, apply_out_sharding(bits, out_sharding, "rng_bit_generator")


# --- rng_uniform -------------------------------------------------------------------------

def _rng_uniform_abstract_eval(a, b, *, shape):
  if a.dtype != b.dtype:
    raise ValueError(f"rng_uniform: arguments must have identical dtypes, got "
                     f"{shape_str((a, b))}")
  if a.shape != () or b.shape != ():
    raise ValueError(f"rng_uniform: arguments must be scalars, got {shape_str((a, b))}")
  if not (dtypes.is_float(a.dtype) or dtypes.is_int(a.dtype)):
    raise TypeError(f"rng_uniform: arguments must be integers or floats, got "
                    f"{shape_str((a, b))}")
  return ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)


rng_uniform_p = Primitive("rng_uniform")
rng_uniform_p.def_abstract_eval(_rng_uniform_abstract_eval)
rng_uniform_p.def_impl(partial(xla.apply_primitive, rng_uniform_p))


def _rng_uniform_lowering(ctx, a, b, *, shape):
  dims = xla.ir_constant(np.asarray(shape, np.int64))
  return hlo.rng(a, b, dims, hlo.RngDistributionAttr.get("UNIFORM"))

xla.register_lowering(rng_uniform_p, _rng_uniform_lowering)


def rng_uniform(a, b, shape):
  """Stateful uniform random numbers in ``[a, b)`` from XLA's RNG op.

  ``a`` and ``b`` are scalars of one dtype. The stream is up to the backend and not
  reproducible across runs or platforms; prefer ``hlox.random``.

  Args:
    a: lower bound (scalar).
    b: upper bound (scalar).
    shape: the output shape (static).

  Returns:
    An array of ``shape`` and the bounds' dtype.

  Examples:
    >>> x = lax.rng_uniform(0., 1., (3,))
    >>> x.shape, bool(((x >= 0) & (x < 1)).all())
    ((3,), True)
  """
  return rng_uniform_p.bind(a, b, shape=base._shape_tuple("rng_uniform", shape))


sharding_types.sharding_rules[rng_bit_generator_p] = sharding_types.rng_bit_generator_rule

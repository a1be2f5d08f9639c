"""The threefry2x32 hash as a primitive, and PRNG keys built on it.

Keys follow JAX 0.10.2 with ``jax_threefry_partitionable=True`` (its default), so the same
seed gives bit-identical keys and bits:

- a raw key is a ``uint32[..., 2]`` array; a typed key (``key(seed)``) is a ``PRNGKeyArray``
  pytree wrapping that data, with the trailing 2 hidden from its shape;
- ``split(key, shape)`` hashes the 64-bit position of each new key (hi, lo words) with the
  key and keeps both output words;
- ``fold_in(key, d)`` hashes the pair ``(0, d)`` with the key;
- ``random_bits`` hashes each output position as ``(0, i)`` and xors the two words (32 bit),
  concatenates them (64 bit) or truncates the xor (8/16 bit).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from hlox import lax
from hlox.config import config
from hlox.core import basearray, dtypes
from hlox.core.tracer import Tracer, eval_trace, get_aval, trace_ctx
from hlox.core.shape_poly import _DimExpr
from hlox.custom_derivatives import CustomVJPPrimal
from hlox.interpreters import ad, batching, xla
from hlox.interpreters.key_reuse import consumed as _consumed_data, note_key, set_consumed
from hlox.lax.base import defbroadcasting
from hlox.lax.utils import broadcasting_shape_rule, standard_primitive
from hlox.runtime.array import Array
from hlox._tree_transform import register_transform_node
from hlox.random import key_reuse

__all__ = ["threefry2x32_p", "threefry_2x32", "PRNGKeyArray", "PRNGKey", "key", "key_data",
           "wrap_key_data", "split", "fold_in", "bits", "clone", "random_bits", "KeyDtype",
           "key_dtype", "key_impl", "hash_primitive", "register_prng", "stack_words", "join_bits",
           "check_bit_width"]

_u32 = np.dtype(np.uint32)


# --- the threefry2x32 primitive ------------------------------------------------------------

def _threefry2x32_shape_rule(*avals):
  shape = broadcasting_shape_rule("threefry2x32", *avals)
  return [shape, shape]


def _threefry2x32_dtype_rule(*avals):
  if any(a.dtype != _u32 for a in avals):
    raise TypeError("threefry2x32: all four operands must be uint32, got "
                    + ", ".join(a.str_short() for a in avals))
  return [_u32, _u32]


threefry2x32_p = standard_primitive(_threefry2x32_shape_rule, _threefry2x32_dtype_rule,
                                    "threefry2x32", weak_type_rule=lambda *a: [False, False],
                                    multiple_results=True)

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x, r):
  return lax.bitwise_or(lax.shift_left(x, np.uint32(r)),
                        lax.shift_right_logical(x, np.uint32(32 - r)))


def _threefry2x32_composition(k1, k2, x1, x2):
  """Threefry-2x32 with 20 rounds, written with wrapping uint32 lax ops."""
  shape = broadcasting_shape_rule("threefry2x32", *map(get_aval, (k1, k2, x1, x2)))

  def bcast(v):
    vshape = get_aval(v).shape
    if vshape == shape:
      return v
    return lax.broadcast_in_dim(v, shape, tuple(range(len(shape) - len(vshape), len(shape))))
  k1, k2, x1, x2 = map(bcast, (k1, k2, x1, x2))
  ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), np.uint32(0x1BD11BDA)))
  x = [lax.add(x1, ks[0]), lax.add(x2, ks[1])]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x[0] = lax.add(x[0], x[1])
      x[1] = lax.bitwise_xor(x[0], _rotl(x[1], r))
    # Key injection after every four rounds: the schedule rotates through ks.
    x[0] = lax.add(x[0], ks[(i + 1) % 3])
    x[1] = lax.add(lax.add(x[1], ks[(i + 2) % 3]), np.uint32(i + 1))
  return x


def _threefry2x32_rolled(k1, k2, x1, x2):
  """The same 20 rounds as a loop of 5 steps of 4 rounds (the rotation amounts and the key
  schedule carried), as JAX lowers threefry on CPU: the unrolled graph is large, and XLA:CPU
  fuses a copy of it into every consumer of the bits, which makes programs that slice one
  draw many ways slow to compile. Same bits as the unrolled form."""
  shape = broadcasting_shape_rule("threefry2x32", *map(get_aval, (k1, k2, x1, x2)))
  # The key schedule is carried at the keys' own shape (a scalar for one key), as JAX
  # does, and broadcast where it is added: carried at the bits' shape it would be three
  # more full-size arrays copied on every trip (4.3x slower for 1M normals).
  key_shape = broadcasting_shape_rule("threefry2x32", get_aval(k1), get_aval(k2))

  def bcast(v, to):
    vshape = get_aval(v).shape
    if vshape == to:
      return v
    return lax.broadcast_in_dim(v, to, tuple(range(len(to) - len(vshape), len(to))))
  k1, k2 = bcast(k1, key_shape), bcast(k2, key_shape)
  x1, x2 = bcast(x1, shape), bcast(x2, shape)
  k3 = lax.bitwise_xor(lax.bitwise_xor(k1, k2), np.uint32(0x1BD11BDA))
  even, odd = (np.array(r, np.uint32) for r in _ROTATIONS)

  def step(i, carry):
    x0, x1, ka, kb, kc = carry
    i = lax.convert_element_type(i, np.uint32)
    is_even = lax.eq(lax.rem(i, np.uint32(2)), np.uint32(0))
    for j in range(4):
      r = lax.select(is_even, even[j], odd[j])
      x0 = lax.add(x0, x1)
      rotated = lax.bitwise_or(lax.shift_left(x1, r),
                               lax.shift_right_logical(x1, lax.sub(np.uint32(32), r)))
      x1 = lax.bitwise_xor(x0, rotated)
    # Key injection after every four rounds; the schedule (ka, kb, kc) then rotates.
    x0 = lax.add(x0, bcast(kb, shape))
    x1 = lax.add(x1, bcast(lax.add(kc, lax.add(i, np.uint32(1))), shape))
    return x0, x1, kb, kc, ka

  x0, x1, *_ = lax.fori_loop(0, 5, step, (lax.add(x1, bcast(k1, shape)),
                                           lax.add(x2, bcast(k2, shape)), k1, k2, k3))
  return [x0, x1]


xla.register_lowering(threefry2x32_p,
                      xla.lower_fun(_threefry2x32_composition, multiple_results=True))
xla.register_lowering(threefry2x32_p,
                      xla.lower_fun(_threefry2x32_rolled, multiple_results=True), platform="cpu")
ad.defjvp_zero(threefry2x32_p)


def _register_threefry_batching():
  # The elementwise broadcasting rule, with one batch dimension per output word.
  defbroadcasting(threefry2x32_p)
  rule = batching.primitive_batchers[threefry2x32_p]

  def batch_rule(vals, dims, **params):
    outs, dim = rule(vals, dims, **params)
    return outs, [dim] * len(outs)
  batching.primitive_batchers[threefry2x32_p] = batch_rule


_register_threefry_batching()


def hash_primitive(name: str, num_operands: int, num_results: int, composition,
                   cpu_composition=None):
  """A counter-based hash as an elementwise primitive: ``num_operands`` broadcasting uint32
  operands (key words, then counter words) in, ``num_results`` uint32 words out, lowered
  by tracing ``composition`` (written with wrapping uint32 lax ops on operands of one shape).
  Its derivative is zero and it batches as an elementwise operation. ``cpu_composition``,
  given the operands unbroadcast, is the CPU lowering (a rolled loop: XLA:CPU compiles the
  unrolled rounds slowly)."""
  def shape_rule(*avals):
    if len(avals) != num_operands:
      raise TypeError(f"{name} expects {num_operands} operands, got {len(avals)}")
    return [broadcasting_shape_rule(name, *avals)] * num_results

  def dtype_rule(*avals):
    if any(a.dtype != _u32 for a in avals):
      raise TypeError(f"{name}: all operands must be uint32, got "
                      + ", ".join(a.str_short() for a in avals))
    return [_u32] * num_results

  def broadcast_composition(*args):
    shape = broadcasting_shape_rule(name, *map(get_aval, args))
    return composition(*(a if get_aval(a).shape == shape else lax.broadcast_in_dim(
        a, shape, tuple(range(len(shape) - get_aval(a).ndim, len(shape)))) for a in args))

  prim = standard_primitive(shape_rule, dtype_rule, name,
                            weak_type_rule=lambda *a: [False] * num_results,
                            multiple_results=True)
  xla.register_lowering(prim, xla.lower_fun(broadcast_composition, multiple_results=True))
  if cpu_composition is not None:
    xla.register_lowering(prim, xla.lower_fun(cpu_composition, multiple_results=True),
                          platform="cpu")
  ad.defjvp_zero(prim)
  defbroadcasting(prim)
  rule = batching.primitive_batchers[prim]

  def batch_rule(vals, dims, **params):
    outs, dim = rule(vals, dims, **params)
    return outs, [dim] * len(outs)
  batching.primitive_batchers[prim] = batch_rule
  return prim


def threefry_2x32(keypair, count):
  """Hash ``count`` (uint32 array) with ``keypair`` = (k1, k2), as JAX's ``threefry_2x32``.

  The flattened counts are split in two halves (zero-padded when odd) that form the two
  input words; the two output words are concatenated back into ``count``'s shape.
  """
  k1, k2 = keypair
  count = lax.convert_element_type(count, _u32) if get_aval(count).dtype != _u32 else count
  shape = get_aval(count).shape
  n = math.prod(shape)
  flat = lax.reshape(count, (n,))
  if n % 2:
    flat = lax.concatenate([flat, np.zeros((1,), _u32)], 0)
  half = flat.shape[0] // 2
  y1, y2 = threefry2x32_p.bind(k1, k2, lax.slice(flat, (0,), (half,)),
                               lax.slice(flat, (half,), (2 * half,)))
  out = lax.concatenate([y1, y2], 0)
  if n % 2:
    out = lax.slice(out, (0,), (n,))
  return lax.reshape(out, shape)


def _iota_2x32(shape):
  """(hi, lo) words of the row-major position of each element of ``shape``."""
  n = math.prod(shape)
  # (A symbolic count is taken to fit in 32 bits: one flat iota, reshaped.)
  if type(n) is int and n > 2 ** 32:
    return _iota_2x32_wide(shape)
  lo = lax.broadcasted_iota(_u32, (n,), 0) if shape else np.zeros((), _u32)
  lo = lax.reshape(lo, shape) if shape else lo
  hi = lax.full(shape, 0, _u32)
  return hi, lo


def _iota_2x32_wide(shape):
  """``_iota_2x32`` for more than 2**32 positions, in uint32 words (x64 may be off): each
  axis's index times its 64-bit stride, summed with carries. An axis longer than a uint32
  can count is read as a (rows, 2**32) view of the flat positions, sliced back."""
  n = math.prod(shape)
  if n > 2 ** 64:
    raise NotImplementedError(f"random bits array of size exceeding 2 ** 64 (shape {shape})")
  if any(d >= 2 ** 32 for d in shape):
    rows = -(-n // 2 ** 32)
    hi = lax.broadcasted_iota(_u32, (rows, 2 ** 32), 0)
    lo = lax.broadcasted_iota(_u32, (rows, 2 ** 32), 1)
    return tuple(lax.reshape(lax.slice(lax.reshape(w, (rows * 2 ** 32,)), (0,), (n,)), shape)
                 for w in (hi, lo))
  return position_2x32([lax.broadcasted_iota(_u32, shape, axis) for axis in range(len(shape))],
                       shape)


def position_2x32(indices, shape):
  """(hi, lo) uint32 words of the row-major position in ``shape`` of the element at
  ``indices`` (one uint32 array per axis, all of one shape): each index times its axis's
  64-bit stride, summed with carries."""
  hi = lo = None
  for axis, i in enumerate(indices):
    stride = math.prod(shape[axis + 1:])
    s_hi, s_lo = np.uint32(stride >> 32), np.uint32(stride & 0xFFFFFFFF)
    p_lo = lax.mul(i, s_lo)
    p_hi = lax.add(lax.mulhi(i, s_lo), lax.mul(i, s_hi))
    if lo is None:
      hi, lo = p_hi, p_lo
      continue
    total = lax.add(lo, p_lo)
    carry = lax.convert_element_type(lax.lt(total, lo), _u32)
    hi, lo = lax.add(lax.add(hi, p_hi), carry), total
  return hi, lo


def stack_words(words, axis):
  """The uint32 words stacked along a new ``axis`` (key data from a hash's outputs)."""
  return lax.concatenate([lax.expand_dims(w, (axis,)) for w in words], axis)


def join_bits(bit_width, words64, words32):
  """Random bits of ``bit_width`` from the hash's output words: (high, low) for 64 bits, the
  xor of ``words32`` otherwise."""
  if bit_width == 64:
    if not dtypes.explicit_64bit_allowed():
      raise ValueError("64-bit random bits need x64 (hlox.config.enable_x64)")
    u64 = np.dtype(np.uint64)
    hi, lo = (lax.convert_element_type(w, u64) for w in words64)
    return lax.bitwise_or(lax.shift_left(hi, lax.full_like(hi, 32)), lo)
  x = words32[0]
  for w in words32[1:]:
    x = lax.bitwise_xor(x, w)
  return x if bit_width == 32 else lax.convert_element_type(x, np.dtype(f"uint{bit_width}"))


def check_bit_width(bit_width):
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")


# --- the PRNG implementations -------------------------------------------------------------

class PRNGImpl:
  """A PRNG implementation: its key data shape (uint32 words per key) and the functions that
  make (from the seed's ``uint32[2]`` threefry key), split and fold keys and draw bits from
  one key's data. ``name`` is what ``impl=``
  takes; ``tag`` names the key dtype (``key<tag>``)."""
  __slots__ = ("name", "tag", "key_shape", "seed", "split", "fold_in", "random_bits",
               "host_seed")

  def __init__(self, name, tag, key_shape, seed, split, fold_in, random_bits,
               host_seed=False):
    self.name, self.tag, self.key_shape = name, tag, tuple(key_shape)
    self.seed, self.split, self.fold_in, self.random_bits = seed, split, fold_in, random_bits
    # ``seed`` also maps NumPy data to NumPy data (no hashing): Python seeds need no program.
    self.host_seed = host_seed

  def __repr__(self):
    return f"PRNGImpl({self.name})"

  def __str__(self):
    return self.name


class PRNGSpec:
  """A PRNG implementation as the public API hands it out (``key_impl`` of keys whose
  implementation is not registered by name, ``hlox.extend.random.define_prng_impl``);
  ``impl=`` takes it. Printed ``PRNGSpec('name')``."""
  __slots__ = ("_impl",)

  def __init__(self, impl: PRNGImpl):
    self._impl = impl

  def __repr__(self):
    return f"PRNGSpec({self._impl.name!r})"

  def __str__(self):
    return str(self._impl)

  def __hash__(self):
    return hash(self._impl)

  def __eq__(self, other):
    return isinstance(other, PRNGSpec) and self._impl is other._impl


def _partitionable() -> bool:
  return config.threefry_partitionable


def _threefry_split(data, shape):
  if _partitionable():
    return _split_data(data, shape)
  # The original scheme: the counts 0 .. 2n-1 hashed as one block, read as n pairs.
  n = math.prod(shape)
  counts = lax.broadcasted_iota(_u32, (2 * n,), 0)
  return lax.reshape(threefry_2x32((data[0], data[1]), counts), tuple(shape) + (2,))


def _threefry_fold_in(data, d):
  y1, y2 = threefry2x32_p.bind(data[0], data[1], np.uint32(0), d)
  return lax.concatenate([lax.reshape(y1, (1,)), lax.reshape(y2, (1,))], 0)


def _threefry_random_bits(data, bit_width, shape):
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  if bit_width == 64 and not dtypes.explicit_64bit_allowed():
    raise ValueError("64-bit random bits need x64 (hlox.config.enable_x64)")
  if _partitionable():
    return random_bits(data, bit_width, shape)
  return _threefry_random_bits_original(data, bit_width, shape)


def _threefry_random_bits_original(data, bit_width, shape):
  # ceil(bit_width * size / 32) words hashed from the counts 0, 1, ...; narrow widths read
  # each word's pieces from the low end, 64 bits pair the first half (high) with the second.
  size = math.prod(shape)
  words = -(-bit_width * size // 32)
  if words >= 2 ** 32 - 1:
    raise NotImplementedError(f"random bits for more than 2**32 words (shape {shape})")
  bits = threefry_2x32((data[0], data[1]), lax.broadcasted_iota(_u32, (words,), 0))
  dtype = np.dtype(f"uint{bit_width}")
  if bit_width == 64:
    half = words // 2
    hi = lax.convert_element_type(lax.slice(bits, (0,), (half,)), dtype)
    lo = lax.convert_element_type(lax.slice(bits, (half,), (words,)), dtype)
    bits = lax.bitwise_or(lax.shift_left(hi, lax.full_like(hi, 32)), lo)
  elif bit_width in (8, 16):
    per = 32 // bit_width
    shifts = lax.mul(np.uint32(bit_width), lax.broadcasted_iota(_u32, (words, per), 1))
    pieces = lax.bitwise_and(lax.shift_right_logical(
        lax.broadcast_in_dim(bits, (words, per), (0,)), shifts), np.uint32(2 ** bit_width - 1))
    bits = lax.slice(lax.convert_element_type(lax.reshape(pieces, (words * per,)), dtype),
                     (0,), (size,))
  return lax.reshape(bits, tuple(shape))


# ``seed`` maps the threefry key of the seed (``uint32[2]``, from ``_seed_data``) to a key.

def _threefry_seed(half):
  return half


def _rbg_seed(half):
  # Both 64-bit halves of an rbg key start as the threefry key of the seed.
  if isinstance(half, np.ndarray):
    return np.concatenate([half, half])
  return lax.concatenate([half, half], 0)


def _halves(data):
  return lax.slice(data, (0,), (2,)), lax.slice(data, (2,), (4,))


def _rbg_split(data, shape):
  # Each 64-bit half of the key is split as a threefry key (in the configured scheme).
  a, b = (_threefry_split(h, shape) for h in _halves(data))
  return lax.concatenate([a, b], len(shape))


def _rbg_fold_in(data, d):
  return lax.concatenate([_threefry_fold_in(h, d) for h in _halves(data)], 0)


def _rbg_random_bits(data, bit_width, shape):
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  return lax.rng_bit_generator(data, tuple(shape), dtype=np.dtype(f"uint{bit_width}"))[1]


def _unsafe_rbg_split(data, shape):
  # Every tenth row of the generator's output is a new key (ten draws act as a hash).
  n = math.prod(shape)
  rows = lax.rng_bit_generator(data, (10 * n, 4), dtype=_u32)[1]
  return lax.reshape(lax.slice(rows, (0, 0), (10 * n, 4), (10, 1)), tuple(shape) + (4,))


def _unsafe_rbg_fold_in(data, d):
  d = lax.convert_element_type(d, _u32) if not isinstance(d, np.generic) else d
  seed = lax.concatenate([lax.full((1,), 0, _u32), lax.reshape(d, (1,))] * 2, 0)
  rows = lax.rng_bit_generator(seed, (10, 4), dtype=_u32)[1]
  return lax.bitwise_xor(data, lax.reshape(lax.slice(rows, (9, 0), (10, 4)), (4,)))


threefry_prng_impl = PRNGImpl("threefry2x32", "fry", (2,), _threefry_seed, _threefry_split,
                              _threefry_fold_in, _threefry_random_bits, host_seed=True)
rbg_prng_impl = PRNGImpl("rbg", "rbg", (4,), _rbg_seed, _rbg_split, _rbg_fold_in,
                         _rbg_random_bits, host_seed=True)
unsafe_rbg_prng_impl = PRNGImpl("unsafe_rbg", "urbg", (4,), _rbg_seed, _unsafe_rbg_split,
                                _unsafe_rbg_fold_in, _rbg_random_bits, host_seed=True)

# Registered implementations, by name (JAX's order).
prngs = {impl.name: impl for impl in (threefry_prng_impl, rbg_prng_impl, unsafe_rbg_prng_impl)}


def register_prng(impl: PRNGImpl) -> None:
  """Make ``impl`` available by name to ``impl=`` and the ``default_prng_impl`` option."""
  if impl.name in prngs:
    raise ValueError(f"PRNG with name {impl.name} already registered: {impl}")
  prngs[impl.name] = impl
  _KEY_DTYPES[impl.name] = KeyDtype(impl)


def default_impl() -> PRNGImpl:
  """The implementation named by the ``default_prng_impl`` option."""
  return resolve_impl(config.default_prng_impl)


def resolve_impl(spec) -> PRNGImpl:
  """The ``PRNGImpl`` for ``impl=`` values: None (the default), a name, or an impl."""
  if spec is None:
    return default_impl()
  if isinstance(spec, PRNGImpl):
    return spec
  if isinstance(spec, PRNGSpec):
    return spec._impl
  if isinstance(spec, KeyDtype):
    return spec._impl
  if isinstance(spec, str):
    impl = prngs.get(spec)
    if impl is None:
      names = ", ".join(f'"{n}"' for n in prngs)
      raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: '
                       f'{names}?')
    return impl
  raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")


def _on_config_change(name, value):
  # An unknown name is refused (the watcher's error restores the old value), as JAX does.
  if name == "default_prng_impl" and value not in prngs:
    names = ", ".join(f"'{n}'" for n in prngs)
    raise ValueError(f"jax_default_prng_impl: unknown PRNG implementation {value!r}; "
                     f"expected one of {names}")

config.add_watcher(_on_config_change)


# --- keys ----------------------------------------------------------------------------------

class KeyDtype(dtypes.ExtendedDType):
  """The dtype of typed keys of one implementation, printed ``key<tag>`` as in JAX
  (``key<fry>`` for threefry2x32). It is an extended dtype: ``dtypes.issubdtype(k.dtype,
  dtypes.prng_key)`` holds, and it equals its name as a string. ``impl`` is the
  implementation."""
  __slots__ = ("_impl", "name")
  type = dtypes.prng_key

  def __init__(self, impl):
    self._impl = impl
    self.name = f"key<{impl.tag}>"

  @property
  def impl(self):
    return self._impl

  def _from_words(self, words):
    """Keys of this dtype over ``words`` (uint32, the key dimensions last): how layers
    below ``random`` (``eval_shape`` of a key-typed ``ShapeDtypeStruct``) make keys."""
    return PRNGKeyArray(words, self._impl)

  @property
  def itemsize(self):
    """Bytes of data per key (4 per uint32 word)."""
    return 4 * math.prod(self._impl.key_shape)

  def __eq__(self, other):
    if isinstance(other, KeyDtype):
      return other._impl is self._impl
    return other == self.name

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash(self.name)

  def __str__(self):
    return self.name

  def __repr__(self):
    return self.name


_KEY_DTYPES = {impl.name: KeyDtype(impl) for impl in prngs.values()}
key_dtype_fry = _KEY_DTYPES["threefry2x32"]


def _key_dtype_of(impl):
  dt = _KEY_DTYPES.get(impl.name)
  if dt is None or dt._impl is not impl:
    dt = KeyDtype(impl)
  return dt


class PRNGKeyArray:
  """Typed PRNG keys (``key(seed)``): an array of keys of shape ``self.shape`` of one
  implementation (``_impl``).

  The data is a ``uint32[*shape, *impl.key_shape]`` array (``key_data``). It is a pytree (the
  implementation is static), so it passes through ``jit`` and ``vmap`` like its data. As in
  JAX it is an ``hlox.Array``: it indexes, reshapes and compares like one, reports its data's
  device and placement, and refuses arithmetic, conversion to NumPy and hashing.
  """
  __slots__ = ("_base", "_impl")
  __hash__ = None  # as every array: mutable in principle, so unhashable

  def __init__(self, base, impl=None):
    self._base = base
    self._impl = threefry_prng_impl if impl is None else impl
    if isinstance(base, Tracer):  # traced: the key-reuse checker learns this data is keys
      note_key(base)

  @property
  def _consumed(self):
    """Which of these (concrete) keys a random function has consumed while
    ``debug_key_reuse`` was on (JAX's attribute): False, True or a mask of ``shape``."""
    return _consumed_data(self._base)

  @_consumed.setter
  def _consumed(self, mask):
    set_consumed(self._base, mask)

  @property
  def _base_array(self):
    """The ``uint32`` key data (JAX's name)."""
    return self._base

  @property
  def shape(self):
    return tuple(get_aval(self._base).shape[:-len(self._impl.key_shape)])

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return math.prod(self.shape)

  @property
  def dtype(self):
    return _key_dtype_of(self._impl)

  @property
  def itemsize(self):
    return self.dtype.itemsize

  @property
  def nbytes(self):
    return self.itemsize * self.size

  # --- placement: the data's ---
  @property
  def device(self):
    return self._base.device

  def devices(self):
    return self._base.devices()

  @property
  def sharding(self):
    return self._base.sharding

  @property
  def is_fully_addressable(self):
    return self._base.is_fully_addressable

  @property
  def is_fully_replicated(self):
    return self._base.is_fully_replicated

  @property
  def addressable_shards(self):
    return self._base.addressable_shards

  @property
  def global_shards(self):
    return self._base.global_shards

  def addressable_data(self, index):
    return PRNGKeyArray(self._base.addressable_data(index), self._impl)

  def on_device_size_in_bytes(self):
    return self._base.on_device_size_in_bytes()

  def unsafe_buffer_pointer(self):
    return self._base.unsafe_buffer_pointer()

  def is_deleted(self):
    return self._base.is_deleted()

  def delete(self):
    self._base.delete()

  def copy_to_host_async(self):
    self._base.copy_to_host_async()

  def block_until_ready(self):
    if hasattr(self._base, "block_until_ready"):
      self._base.block_until_ready()
    return self

  def copy(self):
    """The same keys (their data is immutable)."""
    return self

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  # --- conversions JAX refuses ---
  def __array__(self, dtype=None, copy=None):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                    "hlox.random.key_data(arr) if you wish to extract the underlying integer "
                    "array.")

  def __bool__(self):
    raise TypeError("key array cannot be converted to boolean.")

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d key array")
    return (self[i] for i in range(len(self)))

  # --- indexing and shape operations, on the key axes (the data axes stay whole) ---
  def _tail(self, idx):
    return ((slice(None),) * len(self._impl.key_shape) if any(i is Ellipsis for i in idx)
            else (Ellipsis,))

  def __getitem__(self, idx):
    idx = idx if isinstance(idx, tuple) else (idx,)
    indexed = sum(np.ndim(i) if isinstance(i, (np.ndarray, Array, Tracer)) and
                  np.dtype(get_aval(i).dtype) == np.bool_ else 1
                  for i in idx if i is not None and i is not Ellipsis)
    if indexed > self.ndim:
      raise IndexError(f"Too many indices: array is {self.ndim}-dimensional, but {indexed} "
                       "were indexed")
    return PRNGKeyArray(self._base[idx + self._tail(idx)], self._impl)

  @property
  def at(self):
    """``keys.at[idx].get()`` and ``keys.at[idx].set(other_keys)``, as for arrays."""
    return _KeyIndexUpdateHelper(self)

  def reshape(self, *shape, order="C"):
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    if -1 in shape:
      known = math.prod(d for d in shape if d != -1)
      shape = tuple(self.size // known if d == -1 else d for d in shape)
    return PRNGKeyArray(lax.reshape(self._base, tuple(shape) + self._impl.key_shape),
                        self._impl)

  def ravel(self):
    return self.reshape((self.size,))

  flatten = ravel

  def squeeze(self, axis=None):
    if axis is None:
      axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return self.reshape(tuple(d for i, d in enumerate(self.shape)
                              if i not in {a % max(self.ndim, 1) for a in axes}))

  def transpose(self, *axes):
    axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
    perm = tuple(a % self.ndim for a in axes) if axes else tuple(reversed(range(self.ndim)))
    perm += tuple(range(self.ndim, get_aval(self._base).ndim))
    return PRNGKeyArray(lax.transpose(self._base, perm), self._impl)

  @property
  def T(self):
    return self.transpose()

  def take(self, indices, axis=None, **kwargs):
    """``hlox.numpy.take`` of these keys (keys come back)."""
    from hlox import numpy as jnp  # (numpy's key support is installed by this package)
    return jnp.take(self, indices, axis=axis, **kwargs)

  def swapaxes(self, axis1, axis2):
    perm = list(range(self.ndim))
    a, b = axis1 % self.ndim, axis2 % self.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return self.transpose(perm)

  # --- comparisons: elementwise, keys with keys of one dtype ---
  def __eq__(self, other):
    return self._compare(other, "equal")

  def __ne__(self, other):
    return self._compare(other, "not_equal")

  def _compare(self, other, name):
    from hlox import numpy as jnp
    if not isinstance(other, PRNGKeyArray) or other._impl is not self._impl:
      return getattr(jnp, name)(self, other)  # refused, with JAX's message
    same = jnp.equal(self._base, other._base)
    axes = tuple(range(-len(self._impl.key_shape), 0))
    eq = jnp.all(same, axis=axes)
    return eq if name == "equal" else jnp.logical_not(eq)

  def _select_n(self, which, cases):
    """``lax.select_n`` of key arrays (``lax`` hands them here): select their data."""
    if not all(isinstance(c, PRNGKeyArray) and c._impl is self._impl for c in cases):
      raise TypeError("select_n: the cases must all be keys of dtype "
                      f"{self.dtype}, got {', '.join(str(c.dtype) for c in cases)}")
    base_shape = get_aval(self._base).shape
    w_aval = get_aval(which)
    if w_aval.ndim:
      if tuple(w_aval.shape) != self.shape:
        raise TypeError(f"select_n: which must be scalar or have the keys' shape "
                        f"{self.shape}, got {w_aval.shape}")
      which = lax.broadcast_in_dim(which, base_shape, tuple(range(w_aval.ndim)))
    return PRNGKeyArray(lax.select_n(which, *(c._base for c in cases)), self._impl)

  def __repr__(self):
    return (f"Array({self.shape}, dtype={self.dtype}) overlaying:\n"
            f"{self._base}")


def _refuse(name):
  # Arithmetic on keys goes to hlox.numpy, which refuses it with JAX's message.
  def method(self, *args):
    from hlox import numpy as jnp
    return getattr(jnp, name)(self, *args)
  return method


def _refuse_reflected(name):
  def method(self, other):
    from hlox import numpy as jnp
    return getattr(jnp, name)(other, self)
  return method


for _dunder, _ufunc in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                        ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                        ("mod", "remainder"), ("pow", "power"), ("matmul", "matmul"),
                        ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                        ("lshift", "left_shift"), ("rshift", "right_shift")):
  setattr(PRNGKeyArray, f"__{_dunder}__", _refuse(_ufunc))
  setattr(PRNGKeyArray, f"__r{_dunder}__", _refuse_reflected(_ufunc))
for _dunder, _ufunc in (("neg", "negative"), ("pos", "positive"), ("abs", "absolute"),
                        ("invert", "invert"), ("lt", "less"), ("le", "less_equal"),
                        ("gt", "greater"), ("ge", "greater_equal")):
  setattr(PRNGKeyArray, f"__{_dunder}__", _refuse(_ufunc))
del _dunder, _ufunc


class _KeyIndexUpdateHelper:
  __slots__ = ("keys",)

  def __init__(self, keys):
    self.keys = keys

  def __getitem__(self, idx):
    return _KeyIndexUpdateRef(self.keys, idx)


class _KeyIndexUpdateRef:
  __slots__ = ("keys", "idx")

  def __init__(self, keys, idx):
    self.keys, self.idx = keys, idx

  def get(self, **kwargs):
    return self.keys[self.idx]

  def set(self, values, **kwargs):
    keys = self.keys
    if not isinstance(values, PRNGKeyArray) or values._impl is not keys._impl:
      raise TypeError(f"set: keys of dtype {keys.dtype} can only be set to keys of that "
                      f"dtype, got {getattr(values, 'dtype', type(values).__name__)}")
    idx = self.idx if isinstance(self.idx, tuple) else (self.idx,)
    base = keys._base.at[idx + keys._tail(idx)].set(values._base, **kwargs)
    return PRNGKeyArray(base, keys._impl)


# A leaf for users (as in JAX), but a node over its uint32 data for hlox's transformations,
# whose tracers and rules handle plain arrays only.
def _unflatten_key(impl, children):
  data, = children
  if type(data) is CustomVJPPrimal:  # a symbolic_zeros fwd rule's argument: wraps the key
    return CustomVJPPrimal(_unflatten_key(impl, [data.value]), data.perturbed)
  if getattr(data, "dtype", None) == dtypes.float0:
    # A key's tangent or cotangent (in a custom rule's arguments): as in JAX, float0 of the
    # keys' shape, not a key array over float0 words.
    shape = tuple(data.shape[:len(data.shape) - len(impl.key_shape)])
    aval = getattr(data, "aval", None)
    if aval is not None and not isinstance(data, (Array, Tracer, np.ndarray)):
      return type(data)(aval.update(shape=shape))  # a symbolic zero stays symbolic
    return np.zeros(shape, dtypes.float0)
  return PRNGKeyArray(data, impl)


register_transform_node(PRNGKeyArray, lambda k: ((k._base,), k._impl), _unflatten_key)
basearray.Array.register(PRNGKeyArray)  # isinstance(key, hlox.Array), as in JAX


def _is_arraylike(x):
  return isinstance(x, (Array, Tracer, np.ndarray, np.generic))


def _check_key(name: str, key, allow_batched: bool = False):
  """(typed keys, was_raw) for typed or raw keys; TypeError for anything else. Raw keys
  (uint32 arrays) are read as keys of the default implementation."""
  if isinstance(key, PRNGKeyArray):
    keys, raw = key, False
  elif _is_arraylike(key):
    impl = default_impl()
    aval = get_aval(key)
    ks = impl.key_shape
    if aval.ndim < len(ks) or tuple(aval.shape[aval.ndim - len(ks):]) != ks:
      jax_words = f"expected key_data.shape to end with {ks}; got shape={aval.shape}"
    elif aval.dtype != _u32:
      jax_words = f"expected key_data.dtype = uint32; got dtype={aval.dtype}"
    else:
      jax_words = None
    if jax_words is not None:
      raise TypeError(
          f"{name}: expected a PRNG key: a typed key from hlox.random.key(seed), or a raw "
          f"key, a uint32 array whose shape ends with {ks} from hlox.random.PRNGKey(seed) "
          f"(default implementation {impl.name}); got an array of {aval.str_short()} (JAX "
          f"encountered invalid PRNG key data: {jax_words})")
    if trace_ctx.trace is not eval_trace:
      # As JAX wraps a raw key anew at each call, the key-reuse checker sees a fresh key.
      key = key_reuse.markers["random_wrap"].bind(key)
    keys, raw = _RawKeyView(key, impl), True
    if config._values["legacy_prng_key"] != "allow" or config._values["enable_custom_prng"]:
      _legacy_key_used(name)
  else:
    raise TypeError(f"{name}: expected a PRNG key (from hlox.random.key or PRNGKey), got "
                    f"{type(key).__name__}")
  if not allow_batched and keys.ndim != 0:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{keys.shape} != (). Use hlox.vmap for batching.")
  return keys, raw


class _RawKeyView(PRNGKeyArray):
  """A raw key seen as a typed key for one random call: eagerly the key-reuse checker does
  not track it (JAX checks typed keys only), nor its data passed to a jitted sampler."""
  __slots__ = ()
  _untracked_keys = True  # read by ``api``'s eager key-reuse checks


register_transform_node(_RawKeyView, lambda k: ((k._base,), k._impl),
                        lambda impl, children: PRNGKeyArray(children[0], impl))


def _legacy_key_used(name):
  """The ``legacy_prng_key`` option ('warn' / 'error'), and ``enable_custom_prng``'s
  warning, for a raw key passed to a random function (JAX's texts)."""
  import warnings
  message = (f"{name}: Legacy uint32 key array passed as key to jax.random function. Please "
             "create keys using hlox.random.key(). If use of a raw key array was intended, "
             'set jax_legacy_prng_key="allow".')
  level = config._values["legacy_prng_key"]
  if level == "error":
    raise ValueError(message)
  if level == "warn":
    warnings.warn(message, stacklevel=4)
  else:
    warnings.warn("Raw arrays as random keys to jax.random functions are deprecated. Assuming "
                  "valid threefry2x32 key for now.", FutureWarning, stacklevel=4)


def _return_keys(raw: bool, keys):
  return keys._base if raw else keys


def _seed_data(name: str, seed):
  if isinstance(seed, PRNGKeyArray):
    raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key.")
  if isinstance(seed, (bool, np.bool_)):
    seed = int(seed)
  offset = config._values["random_seed_offset"]
  if isinstance(seed, int):
    if not -2 ** 63 <= seed < 2 ** 63:  # JAX reads a Python int seed as an int64
      raise OverflowError(f"{name}: the seed {seed} is out of range for int64")
    seed += offset
    # Python ints: the low 32 bits (and the high 32 bits with x64), as JAX does.
    hi = (seed >> 32) & 0xFFFFFFFF if dtypes.x64_enabled() else 0
    return np.array([hi, seed & 0xFFFFFFFF], _u32)
  if not (_is_arraylike(seed) or isinstance(seed, float)):
    raise TypeError(f"{name}: PRNG key seed must be an integer; got {type(seed).__name__}")
  aval = _check_seed_aval(name, get_aval(seed))
  if isinstance(seed, (np.ndarray, np.generic)):
    s = int(seed) + offset
    hi = (s >> 32) & 0xFFFFFFFF if np.dtype(aval.dtype).itemsize == 8 else 0
    return np.array([hi, s & 0xFFFFFFFF], _u32)
  if offset:
    seed = lax.add(seed, np.array(offset).astype(aval.dtype))
  lo = lax.convert_element_type(seed, _u32)
  if np.dtype(aval.dtype).itemsize == 8:
    hi = lax.convert_element_type(lax.shift_right_logical(seed, np.array(32, aval.dtype)), _u32)
  else:
    hi = lax.full((), 0, _u32)
  return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def _check_seed_aval(name, aval):
  if aval.ndim:
    raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape "
                    f"{aval.shape} != (). Use hlox.vmap for batching")
  if not dtypes.is_int(aval.dtype) and not dtypes.is_unsigned_int(aval.dtype):
    raise TypeError(f"{name}: PRNG key seed must be an integer; got dtype {aval.dtype}")
  return aval


def _seed_key_data(name, seed, impl):
  if isinstance(seed, Array):
    # A concrete seed is hashed by a compiled program, its constants inside it: no implicit
    # transfer (as JAX, under ``transfer_guard('disallow')``).
    _check_seed_aval(name, get_aval(seed))  # its messages, before compiling
    return _eager_jit(("seed", name, impl), _seed_traced, name, impl)(seed)
  data = _seed_data(name, seed)
  if not isinstance(data, np.ndarray):
    return impl.seed(data)
  if impl.host_seed:
    return _device_array(impl.seed(data))
  return _eager_jit(("hash_seed", impl), impl.seed)(data)


def _seed_traced(name, impl, seed):
  return impl.seed(_seed_data(name, seed))


def _device_array(data):
  from hlox.numpy import asarray
  return asarray(data)


_EAGER_FNS = {}
_EAGER_USES = {}


def _used_again(cache_key) -> bool:
  """Whether an eager key operation has run before with ``cache_key``: a repeated one runs
  compiled (``_eager_jit``); a one-off runs op by op, which compiles nothing new for it."""
  if cache_key in _EAGER_FNS:
    return True
  seen = _EAGER_USES.get(cache_key, 0)
  if seen < 2:
    if len(_EAGER_USES) > 4096:
      _EAGER_USES.clear()
    _EAGER_USES[cache_key] = seen + 1
    return False
  return True


def _eager_jit(cache_key, fn, *static):
  """``fn`` with the leading arguments ``static``, jitted once per ``cache_key``: key
  operations on concrete keys run as one compiled program (as JAX's ``jit(inline=True)``
  implementations do) rather than op by op."""
  jitted = _EAGER_FNS.get(cache_key)
  if jitted is None:
    from hlox.api import jit
    if len(_EAGER_FNS) > 512:  # one entry per split shape: keep it bounded
      _EAGER_FNS.clear()
    jitted = _EAGER_FNS[cache_key] = jit(functools.partial(fn, *static))
  return jitted


def PRNGKey(seed, *, impl=None) -> Array:
  """A raw (legacy) PRNG key for an integer seed: an array of ``uint32`` words.

  The same words as ``key_data(key(seed, impl=impl))``; for the default threefry2x32 it is a
  ``uint32[2]`` holding the high and low 32 bits of the seed. Every ``hlox.random`` function
  accepts raw keys as well as typed ones. The seed may be a Python int, a NumPy integer or an
  integer (scalar) array, traced or not; a non-integer seed raises TypeError.

  Args:
    seed: integer seed (64 bits are used when it does not fit in 32).
    impl: optional PRNG implementation name (``"threefry2x32"``, ``"rbg"``,
      ``"unsafe_rbg"``, ...); the ``default_prng_impl`` option when None.

  Returns:
    A ``uint32`` array of the implementation's key shape.

  Examples:
    >>> random.PRNGKey(42)
    Array([ 0, 42], dtype=uint32)

  See also:
    :func:`hlox.random.key`, the typed-key equivalent.
  """
  return _seed_key_data("PRNGKey", seed, resolve_impl(impl))


def _impl_or_dtype(name, impl, dtype):
  if impl is not None and dtype is not None:
    raise ValueError(f"{name}: Cannot specify both `impl` and `dtype`.")
  return resolve_impl(dtype if impl is None else impl)


def key(seed, *, impl=None, dtype=None) -> PRNGKeyArray:
  """A typed PRNG key for an integer seed.

  A typed key is a scalar array of a key dtype (``key<fry>`` for threefry2x32) that wraps the
  implementation's ``uint32`` words; arithmetic on it is refused, and the implementation
  travels with it, so samplers need no ``impl`` argument. Works under ``jit`` with a traced
  seed. A non-integer seed raises TypeError; giving both ``impl`` and ``dtype`` raises
  ValueError.

  Args:
    seed: integer seed (Python int, NumPy integer or integer scalar array).
    impl: optional PRNG implementation name; the ``default_prng_impl`` option when None.
    dtype: optional key dtype (``key_dtype(impl)``), another way to say ``impl``.

  Returns:
    A scalar typed key array.

  Examples:
    >>> k = random.key(0)
    >>> k.dtype
    key<fry>
    >>> random.key_data(k)
    Array([0, 0], dtype=uint32)
  """
  impl = _impl_or_dtype("key", impl, dtype)
  return PRNGKeyArray(_seed_key_data("key", seed, impl), impl)


def key_data(keys):
  """The ``uint32`` words under typed keys.

  Raw keys are returned as they are. Works on key arrays of any shape and under ``jit``,
  ``vmap`` and ``grad`` (the words are not differentiable).

  Args:
    keys: typed or raw key array.

  Returns:
    A ``uint32`` array of shape ``keys.shape + key_shape`` (``(2,)`` per key for threefry2x32).

  Examples:
    >>> random.key_data(random.key(7))
    Array([0, 7], dtype=uint32)
  """
  if isinstance(keys, PRNGKeyArray):
    return _use("random_unwrap", keys)
  return _check_key("key_data", keys, allow_batched=True)[0]._base


def wrap_key_data(key_bits_array, *, impl=None, dtype=None) -> PRNGKeyArray:
  """Wrap ``uint32`` key words as typed keys: the inverse of ``key_data``.

  The trailing axes of ``key_bits_array`` must be the implementation's key shape (``(2,)`` for
  threefry2x32) and its dtype uint32, else TypeError; an already typed key raises TypeError too.

  Args:
    key_bits_array: ``uint32`` array of shape ``batch_shape + key_shape``.
    impl: optional PRNG implementation name; the ``default_prng_impl`` option when None.
    dtype: optional key dtype, another way to say ``impl``.

  Returns:
    A typed key array of shape ``batch_shape``.

  Examples:
    >>> k = random.wrap_key_data(jnp.array([0, 7], dtype=jnp.uint32))
    >>> k.dtype
    key<fry>
    >>> random.key_data(k)
    Array([0, 7], dtype=uint32)
  """
  impl = _impl_or_dtype("wrap_key_data", impl, dtype)
  if isinstance(key_bits_array, PRNGKeyArray):
    raise TypeError("wrap_key_data: the argument is already a typed key")
  if not _is_arraylike(key_bits_array):
    key_bits_array = np.asarray(key_bits_array)
  aval = get_aval(key_bits_array)
  ks = impl.key_shape
  if aval.dtype != _u32 or aval.ndim < len(ks) or tuple(aval.shape[aval.ndim - len(ks):]) != ks:
    raise TypeError(f"wrap_key_data: key data for {impl.name} must be a uint32 array whose "
                    f"shape ends with {ks}, got {aval.str_short()}")
  if trace_ctx.trace is not eval_trace:  # traced data becomes fresh keys (key-reuse checker)
    key_bits_array = key_reuse.markers["random_wrap"].bind(key_bits_array)
  return PRNGKeyArray(key_bits_array, impl)


def key_dtype(impl=None) -> KeyDtype:
  """The key dtype of typed keys made with a PRNG implementation.

  Args:
    impl: PRNG implementation name (or spec); the ``default_prng_impl`` option when None.
      Unknown names raise ValueError.

  Returns:
    The ``KeyDtype`` (printed ``key<fry>`` for threefry2x32).

  Examples:
    >>> random.key_dtype()
    key<fry>
    >>> random.key(0).dtype == random.key_dtype()
    True
  """
  return _key_dtype_of(resolve_impl(impl))


def key_impl(keys):
  """The PRNG implementation of a key array.

  Raw keys are taken to be of the default implementation.

  Args:
    keys: typed or raw key array.

  Returns:
    The implementation's name when it is registered under it, else a ``PRNGSpec``.

  Examples:
    >>> random.key_impl(random.key(0))
    'threefry2x32'
  """
  impl = _check_key("key_impl", keys, allow_batched=True)[0]._impl
  return impl.name if prngs.get(impl.name) is impl else PRNGSpec(impl)


def clone(key):
  """A copy of a key that the key-reuse checker treats as fresh.

  The values are unchanged; only under ``debug_key_reuse`` does it matter, where it lets a
  key be consumed again deliberately. Raw keys are returned as they are.

  Args:
    key: typed or raw key array.

  Returns:
    A key array equal to ``key``.

  Examples:
    >>> random.key_data(random.clone(random.key(3)))
    Array([0, 3], dtype=uint32)
  """
  keys, raw = _check_key("clone", key, allow_batched=True)
  if raw:
    return key
  base = keys._base
  if trace_ctx.trace is not eval_trace:
    base = key_reuse.markers["random_clone"].bind(base)
  elif _options["debug_key_reuse"] and isinstance(base, Array):
    base = lax.copy_p.bind(base)  # its own data, so its own (fresh) consumption record
  return PRNGKeyArray(base, keys._impl)


def _split_data(data, shape):
  """Partitionable threefry split of one key's ``uint32[2]`` data."""
  hi, lo = _iota_2x32(shape)
  b1, b2 = threefry2x32_p.bind(data[0], data[1], hi, lo)
  return lax.concatenate([lax.expand_dims(b1, (len(shape),)),
                          lax.expand_dims(b2, (len(shape),))], len(shape))


_options = config._values


def _use(name, keys):
  """The data of ``keys`` for the random function's use ``name``: as it is, except where the
  key-reuse checker watches (a trace; ``debug_key_reuse`` on), which ``key_reuse.use``
  shows the use to."""
  if trace_ctx.trace is eval_trace and (not _options["debug_key_reuse"]
                                        or type(keys) is _RawKeyView):
    return keys._base
  return key_reuse.use(name, keys._base)


def split_keys(keys: PRNGKeyArray, shape) -> PRNGKeyArray:
  """Typed keys of ``shape`` split from one typed key (any implementation)."""
  impl, base, shape = keys._impl, _use("random_split", keys), tuple(shape)
  if isinstance(base, Array) and _used_again(("split", impl, shape)):
    return PRNGKeyArray(_eager_jit(("split", impl, shape), _split_base, impl, shape)(base),
                        impl)
  return PRNGKeyArray(impl.split(base, shape), impl)


def _split_base(impl, shape, data):
  return impl.split(data, shape)


def _fold_in_base(impl, data, d):
  return impl.fold_in(data, d)


def keys_random_bits(keys: PRNGKeyArray, bit_width: int, shape):
  """Random bits of ``bit_width`` and ``shape`` from one typed key."""
  return keys._impl.random_bits(_use("random_bits", keys), bit_width, tuple(shape))


def _canonical_shape(name, shape):
  if isinstance(shape, (int, np.integer)):
    shape = (shape,)
  tracers = [d for d in (shape if isinstance(shape, (tuple, list)) else ())
             if isinstance(d, Tracer)]
  if tracers:  # JAX's text, with where the first traced dimension came from
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{tuple(shape)}.\nIf using `jit`, try using `static_argnums` or "
                    "applying `jit` to smaller subfunctions." + tracers[0]._origin_msg())
  try:
    # Symbolic sizes (shape polymorphism) stay as they are.
    shape = tuple(d if type(d) is _DimExpr else int(d) for d in shape)
  except TypeError:
    raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{name}: shape must be non-negative, got {shape}")
  return shape


def split(key, num=2):
  """Split a PRNG key into ``num`` new, independent keys.

  Use each new key once, and do not use ``key`` again after splitting it. Raw keys give raw
  keys (their ``uint32`` words on a trailing axis), typed keys give typed keys. To split many
  keys, ``vmap`` this function.

  Args:
    key: a scalar key, typed or raw.
    num: int, or a tuple of ints: the number (or shape) of keys to make.

  Returns:
    Keys of shape ``(num,)`` (or ``num``), of the kind of ``key``.

  Examples:
    >>> random.split(random.PRNGKey(0))
    Array([[1797259609, 2579123966],
           [ 928981903, 3453687069]], dtype=uint32)
    >>> random.split(random.key(0), (2, 3)).shape
    (2, 3)
  """
  keys, raw = _check_key("split", key)
  return _return_keys(raw, split_keys(keys, _canonical_shape("split", num)))


def fold_in(key, data):
  """Fold an integer into a PRNG key, giving a new key.

  The new key is a deterministic function of ``key`` and ``data`` (only its low 32 bits are
  used), so ``fold_in(key, i)`` for a step or device index ``i`` gives distinct streams. An
  array ``data`` must be scalar (TypeError otherwise; ``vmap`` for batches).

  Args:
    key: a scalar key, typed or raw.
    data: a 32-bit integer (Python int or integer scalar array, traced or not).

  Returns:
    A new key of the kind of ``key``.

  Examples:
    >>> random.key_data(random.fold_in(random.key(0), 1))
    Array([ 928981903, 3453687069], dtype=uint32)
  """
  keys, raw = _check_key("fold_in", key)
  dshape = get_aval(data).shape if isinstance(data, (Array, Tracer)) else np.shape(data)
  if dshape:
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {dshape} "
                    f"!= (). Use hlox.vmap for batching.")
  if isinstance(data, (int, np.integer)):
    d = np.uint32(int(data) & 0xFFFFFFFF)
  else:
    d = lax.convert_element_type(data, _u32)
  impl, base = keys._impl, _use("random_fold_in", keys)
  if (isinstance(base, Array) and not isinstance(d, Tracer)
      and _used_again(("fold_in", impl))):
    out = _eager_jit(("fold_in", impl), _fold_in_base, impl)(base, d)
  else:
    out = impl.fold_in(base, d)
  return _return_keys(raw, PRNGKeyArray(out, impl))


def random_bits(data, bit_width: int, shape):
  """Uniform random bits of ``bit_width`` (8/16/32/64) from threefry key data ``uint32[2]``
  (the partitionable scheme)."""
  hi, lo = _iota_2x32(shape)
  b1, b2 = threefry2x32_p.bind(data[0], data[1], hi, lo)
  if bit_width == 64:
    u64 = np.dtype(np.uint64)
    if not dtypes.explicit_64bit_allowed():
      raise ValueError("64-bit random bits need x64 (hlox.config.enable_x64)")
    return lax.bitwise_or(lax.shift_left(lax.convert_element_type(b1, u64),
                                          lax.full_like(b1, 32, u64)),
                          lax.convert_element_type(b2, u64))
  x = lax.bitwise_xor(b1, b2)
  if bit_width == 32:
    return x
  return lax.convert_element_type(x, np.dtype(f"uint{bit_width}"))


def bits(key, shape=(), dtype=None):
  """Sample uniformly random bits as unsigned integers.

  Every bit is independently 0 or 1 with equal chance; other dtypes than unsigned ones raise
  ValueError.

  Args:
    key: a scalar key, typed or raw.
    shape: tuple of ints: the result's shape (static).
    dtype: an unsigned integer dtype (default uint32; uint64 with x64 enabled).
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype`` with random bits.

  Examples:
    >>> random.bits(random.key(0), (3,))
    Array([4070199207, 4202968722, 1427181096], dtype=uint32)
  """
  keys, _ = _check_key("bits", key)
  dtype = np.dtype(np.uint64 if dtypes.x64_enabled() else np.uint32) if dtype is None \
      else dtypes.check_user_dtype(dtype)
  if not dtypes.is_unsigned_int(dtype):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  return keys_random_bits(keys, dtype.itemsize * 8, _canonical_shape("bits", shape))

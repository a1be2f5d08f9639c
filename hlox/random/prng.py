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

import math

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import Tracer, get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax.base import defbroadcasting
from hlox.lax.utils import broadcasting_shape_rule, standard_primitive
from hlox.runtime.array import Array
from hlox.tree_util import register_pytree_node

__all__ = ["threefry2x32_p", "threefry_2x32", "PRNGKeyArray", "PRNGKey", "key", "key_data",
           "wrap_key_data", "split", "fold_in", "bits", "clone", "random_bits", "KeyDtype",
           "key_dtype", "key_impl"]

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
  if n > 2 ** 32:
    # Positions past 2**32 would need a 64-bit iota; sizes that large do not fit memory.
    raise NotImplementedError(f"random bits for more than 2**32 values (shape {shape})")
  lo = lax.broadcasted_iota(_u32, (n,), 0) if shape else np.zeros((), _u32)
  lo = lax.reshape(lo, shape) if shape else lo
  hi = lax.full(shape, 0, _u32)
  return hi, lo


# --- keys ----------------------------------------------------------------------------------

class KeyDtype:
  """The dtype of typed threefry keys, printed ``key<fry>`` as in JAX. It is an extended dtype:
  ``dtypes.issubdtype(k.dtype, dtypes.prng_key)`` holds, and it equals the string
  ``'key<fry>'``. ``impl`` names the PRNG implementation."""
  __slots__ = ()
  type = dtypes.prng_key
  name = "key<fry>"
  impl = "threefry2x32"

  def __eq__(self, other):
    return isinstance(other, KeyDtype) or other == self.name

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash(self.name)

  def __str__(self):
    return self.name

  def __repr__(self):
    return self.name


key_dtype_fry = KeyDtype()


class PRNGKeyArray:
  """Typed PRNG keys (``key(seed)``): an array of threefry keys of shape ``self.shape``.

  The data is a ``uint32[*shape, 2]`` array (``key_data``). It is a pytree, so it passes
  through ``jit`` and ``vmap`` like the data it wraps.
  """
  __slots__ = ("_base",)

  def __init__(self, base):
    self._base = base

  @property
  def shape(self):
    return tuple(get_aval(self._base).shape[:-1])

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return math.prod(self.shape)

  @property
  def dtype(self):
    return key_dtype_fry

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of an unsized PRNG key array")
    return self.shape[0]

  def __iter__(self):
    return (self[i] for i in range(len(self)))

  def __getitem__(self, idx):
    # Index the key dimensions only; the trailing data axis of size 2 stays whole.
    idx = idx if isinstance(idx, tuple) else (idx,)
    tail = (slice(None),) if any(i is Ellipsis for i in idx) else (Ellipsis,)
    return PRNGKeyArray(self._base[idx + tail])

  def reshape(self, *shape):
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return PRNGKeyArray(lax.reshape(self._base, tuple(shape) + (2,)))

  def __repr__(self):
    return f"PRNGKeyArray(shape={self.shape}, dtype=key<fry>) overlaying:\n{self._base}"


register_pytree_node(PRNGKeyArray, lambda k: ((k._base,), None),
                     lambda _, children: PRNGKeyArray(children[0]))


def _is_arraylike(x):
  return isinstance(x, (Array, Tracer, np.ndarray, np.generic))


def _check_key(name: str, key, allow_batched: bool = False):
  """(uint32[..., 2] data, was_raw) for a typed or raw key; TypeError for anything else."""
  if isinstance(key, PRNGKeyArray):
    data, raw = key._base, False
  elif _is_arraylike(key):
    aval = get_aval(key)
    if aval.dtype != _u32 or aval.ndim < 1 or aval.shape[-1] != 2:
      raise TypeError(
          f"{name}: expected a PRNG key: a typed key from hlox.random.key(seed), or a raw "
          f"key, a uint32 array whose shape ends with (2,) from hlox.random.PRNGKey(seed); "
          f"got an array of {aval.str_short()}")
    data, raw = key, True
  else:
    raise TypeError(f"{name}: expected a PRNG key (from hlox.random.key or PRNGKey), got "
                    f"{type(key).__name__}")
  if not allow_batched and get_aval(data).ndim != 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{tuple(get_aval(data).shape[:-1])} != (). Use hlox.vmap for batching.")
  return data, raw


def _return_keys(raw: bool, data):
  return data if raw else PRNGKeyArray(data)


def _seed_data(name: str, seed):
  if isinstance(seed, PRNGKeyArray):
    raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key.")
  if isinstance(seed, (bool, np.bool_)):
    seed = int(seed)
  if isinstance(seed, int):
    # Python ints: the low 32 bits (and the high 32 bits with x64), as JAX does.
    hi = (seed >> 32) & 0xFFFFFFFF if dtypes.x64_enabled() else 0
    return np.array([hi, seed & 0xFFFFFFFF], _u32)
  if not (_is_arraylike(seed) or isinstance(seed, float)):
    raise TypeError(f"{name}: PRNG key seed must be an integer, got {type(seed).__name__}")
  aval = get_aval(seed)
  if aval.ndim:
    raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape "
                    f"{aval.shape} != (). Use hlox.vmap for batching")
  if not dtypes.is_int(aval.dtype) and not dtypes.is_unsigned_int(aval.dtype):
    raise TypeError(f"{name}: PRNG key seed must be an integer, got dtype {aval.dtype}")
  if isinstance(seed, (np.ndarray, np.generic)):
    s = int(seed)
    hi = (s >> 32) & 0xFFFFFFFF if np.dtype(aval.dtype).itemsize == 8 else 0
    return np.array([hi, s & 0xFFFFFFFF], _u32)
  lo = lax.convert_element_type(seed, _u32)
  if np.dtype(aval.dtype).itemsize == 8:
    hi = lax.convert_element_type(lax.shift_right_logical(seed, np.array(32, aval.dtype)), _u32)
  else:
    hi = lax.full((), 0, _u32)
  return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def PRNGKey(seed) -> Array:
  """A raw threefry key, ``uint32[2]`` = (high 32 bits, low 32 bits) of the integer seed."""
  return _raw_key("PRNGKey", seed)


def _raw_key(name, seed):
  data = _seed_data(name, seed)
  return lax.convert_element_type(data, _u32) if isinstance(data, np.ndarray) else data


def key(seed, *, impl=None) -> PRNGKeyArray:
  """A typed scalar threefry key for ``seed``."""
  if impl not in (None, "threefry2x32"):
    raise ValueError(f"key: unrecognized PRNG implementation {impl!r}: only "
                     "'threefry2x32' exists")
  return PRNGKeyArray(_raw_key("key", seed))


def key_data(keys):
  """The ``uint32[..., 2]`` data under typed keys (raw keys are returned as they are)."""
  data, _ = _check_key("key_data", keys, allow_batched=True)
  return data


def wrap_key_data(key_bits_array, *, impl=None) -> PRNGKeyArray:
  """Typed keys from ``uint32[..., 2]`` data."""
  if impl not in (None, "threefry2x32"):
    raise ValueError(f"wrap_key_data: only 'threefry2x32' exists, got {impl!r}")
  if isinstance(key_bits_array, PRNGKeyArray):
    raise TypeError("wrap_key_data: the argument is already a typed key")
  data, _ = _check_key("wrap_key_data", key_bits_array, allow_batched=True)
  return PRNGKeyArray(data)


def key_dtype(impl=None) -> KeyDtype:
  """The dtype of typed keys made with PRNG implementation ``impl`` (only threefry2x32)."""
  if impl not in (None, "threefry2x32"):
    raise ValueError(f"key_dtype: only the 'threefry2x32' implementation exists, got {impl!r}")
  return key_dtype_fry


def key_impl(keys) -> str:
  """The name of the PRNG implementation behind ``keys`` (typed or raw): ``'threefry2x32'``."""
  _check_key("key_impl", keys, allow_batched=True)
  return "threefry2x32"


def clone(key):
  """A copy of ``key`` (keys are immutable values here, so this is the identity)."""
  _check_key("clone", key, allow_batched=True)
  return key


def _split_data(data, shape):
  hi, lo = _iota_2x32(shape)
  b1, b2 = threefry2x32_p.bind(data[0], data[1], hi, lo)
  return lax.concatenate([lax.expand_dims(b1, (len(shape),)),
                          lax.expand_dims(b2, (len(shape),))], len(shape))


def _canonical_shape(name, shape):
  if isinstance(shape, (int, np.integer)):
    shape = (shape,)
  try:
    shape = tuple(int(d) for d in shape)
  except TypeError:
    raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{name}: shape must be non-negative, got {shape}")
  return shape


def split(key, num=2):
  """``num`` (an int or a shape) new keys from ``key``, along new leading axes."""
  data, raw = _check_key("split", key)
  return _return_keys(raw, _split_data(data, _canonical_shape("split", num)))


def fold_in(key, data):
  """A new key that is a deterministic function of ``key`` and the 32-bit integer ``data``."""
  kd, raw = _check_key("fold_in", key)
  dshape = get_aval(data).shape if isinstance(data, (Array, Tracer)) else np.shape(data)
  if dshape:
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {dshape} "
                    f"!= (). Use hlox.vmap for batching.")
  if isinstance(data, (int, np.integer)):
    d = np.uint32(int(data) & 0xFFFFFFFF)
  else:
    d = lax.convert_element_type(data, _u32)
  y1, y2 = threefry2x32_p.bind(kd[0], kd[1], np.uint32(0), d)
  return _return_keys(raw, lax.concatenate([lax.reshape(y1, (1,)), lax.reshape(y2, (1,))], 0))


def random_bits(data, bit_width: int, shape):
  """Uniform random bits of ``bit_width`` (8/16/32/64) from key data ``uint32[2]``."""
  hi, lo = _iota_2x32(shape)
  b1, b2 = threefry2x32_p.bind(data[0], data[1], hi, lo)
  if bit_width == 64:
    u64 = np.dtype(np.uint64)
    if not dtypes.x64_enabled():
      raise ValueError("64-bit random bits need x64 (hlox.config.enable_x64)")
    return lax.bitwise_or(lax.shift_left(lax.convert_element_type(b1, u64), np.uint64(32)),
                          lax.convert_element_type(b2, u64))
  x = lax.bitwise_xor(b1, b2)
  if bit_width == 32:
    return x
  return lax.convert_element_type(x, np.dtype(f"uint{bit_width}"))


def bits(key, shape=(), dtype=None):
  """Random bits of an unsigned ``dtype`` (default uint32; uint64 with x64)."""
  data, _ = _check_key("bits", key)
  dtype = np.dtype(np.uint64 if dtypes.x64_enabled() else np.uint32) if dtype is None \
      else np.dtype(dtype)
  if not dtypes.is_unsigned_int(dtype):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  return random_bits(data, dtype.itemsize * 8, _canonical_shape("bits", shape))

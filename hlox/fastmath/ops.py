"""Backend selection and the dispatching operations of ``hlox.fastmath`` (Trax's ``ops``).

Every operation looks up the active backend's table at call time, in this order: the
innermost ``use_backend`` block of the calling thread, then ``set_backend``, then
configuration (the ``HLOX_FASTMATH_BACKEND`` environment variable, read at import as hlox's
other ``HLOX_*`` options are, then a gin binding ``backend.name = '...'`` when gin-config is
installed), then ``'hlox'``. The lookup is a few attribute and dictionary reads, so the
proxies cost well under a microsecond per call. A backend's module is imported on first use:
the NumPy backend never loads the hlox one (nor XLA).
"""
from __future__ import annotations

import contextlib
import enum
import importlib
import os
import threading

import numpy as np

from hlox.fastmath import nested

try:  # Trax's configuration idiom; optional.
  import gin
  gin.configurable  # noqa: B018  (a stray namespace package named gin is not gin-config)
except (ImportError, AttributeError):
  gin = None

__all__ = [
    "Backend", "backend", "backend_name", "is_backend", "set_backend", "use_backend",
    "numpy", "random", "logsumexp", "expit", "sigmoid", "erf", "conv", "avg_pool",
    "max_pool", "sum_pool", "top_k", "sort_key_val", "scan", "map", "fori_loop", "remat",
    "cond", "lt", "index_update", "index_add", "index_min", "index_max", "dynamic_slice",
    "dynamic_slice_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
    "stop_gradient", "jit", "disable_jit", "vmap", "grad", "value_and_grad", "vjp",
    "custom_grad", "custom_vjp", "pmap", "psum", "abstract_eval", "dataset_as_numpy",
    "global_device_count", "local_device_count",
]

ENV_VAR = "HLOX_FASTMATH_BACKEND"


class Backend(enum.Enum):
  """The backends: ``HLOX`` (hlox on XLA, the default; ``JAX`` is the same member, so code
  asking for "the accelerated backend" gets hlox) and ``NUMPY`` (plain NumPy)."""
  HLOX = "hlox"
  JAX = "hlox"  # an alias: Backend.JAX is Backend.HLOX
  NUMPY = "numpy"

  @classmethod
  def _missing_(cls, value):
    return cls.HLOX if value == "jax" else None


_MODULES = {"hlox": "hlox.fastmath.hlox_backend", "numpy": "hlox.fastmath.numpy_backend"}
_TABLE_NAMES = {"hlox": "HLOX_BACKEND", "numpy": "NUMPY_BACKEND"}
_VALID = "'hlox' (alias 'jax'), 'numpy'"
_TABLES: dict = {}


def _canonical_name(name, api):
  """'hlox' or 'numpy' for a Backend member or one of the names; errors name ``api``."""
  if isinstance(name, Backend):
    return name.value
  if not isinstance(name, str):
    raise TypeError(f"{api}: expected a backend name (a string) or a fastmath.Backend member, "
                    f"got {type(name).__name__} {name!r}; valid names: {_VALID}")
  key = name.lower()
  if key == "jax":
    return "hlox"
  if key in _MODULES:
    return key
  raise ValueError(f"{api}: no backend named {name!r}; valid names: {_VALID}")


def _load(name):
  table = _TABLES.get(name)
  if table is None:
    table = getattr(importlib.import_module(_MODULES[name]), _TABLE_NAMES[name])
    _TABLES[name] = table
  return table


class _State(threading.local):
  """The calling thread's stack of ``use_backend`` names (innermost last)."""

  def __init__(self):
    self.stack = []


_local = _State()
# Open use_backend blocks over all threads: while there are none (the usual case), lookups
# skip the thread-local read.
_blocks = 0
_blocks_lock = threading.Lock()
_default = None  # set_backend's name, or None
_env_name = None
if os.environ.get(ENV_VAR):
  _env_name = _canonical_name(os.environ[ENV_VAR], f"the {ENV_VAR} environment variable")

_GIN_KEY = ("", "hlox.fastmath.backend")
_gin_config = getattr(getattr(gin, "config", None), "_CONFIG", None)

if _gin_config is not None:
  def _gin_name():
    # gin's public query costs ~15 us; its binding table is one dict read.
    bound = _gin_config.get(_GIN_KEY)
    if bound is None or "name" not in bound:
      return None
    return _canonical_name(bound["name"], "gin binding backend.name")
elif gin is not None:
  def _gin_name():
    try:
      return _canonical_name(gin.query_parameter("backend.name"), "gin binding backend.name")
    except ValueError:
      return None
else:
  def _gin_name():
    return None


def _active_name():
  if _blocks:
    stack = _local.stack
    if stack:
      return stack[-1]
  return _default or _env_name or _gin_name() or "hlox"


def _table():
  # The proxies' hot path: _active_name inlined, then one dictionary read.
  if _blocks:
    stack = _local.stack
    if stack:
      name = stack[-1]
      return _TABLES.get(name) or _load(name)
  name = _default or _env_name or _gin_name() or "hlox"
  return _TABLES.get(name) or _load(name)


def backend(name=None):
  """The active backend's table (a dict with at least ``'name'`` and ``'np'``).

  ``name`` (what a gin binding ``backend.name = 'numpy'`` sets) is used when no
  ``use_backend`` block, ``set_backend`` or environment variable decides.
  """
  if name is not None:
    name = _canonical_name(name, "backend")
  stack = _local.stack if _blocks else None
  if stack:
    return _load(stack[-1])
  if _default is not None:
    return _load(_default)
  return _load(_env_name or name or _gin_name() or "hlox")


if gin is not None:
  backend = gin.configurable("backend", module="hlox.fastmath")(backend)


def backend_name():
  """The active backend's name: ``'hlox'`` or ``'numpy'``."""
  return _active_name()


def is_backend(backend_):
  """Whether ``backend_`` (a Backend member or name) is the active backend."""
  return _active_name() == _canonical_name(backend_, "is_backend")


def set_backend(name):
  """Make ``name`` the backend outside ``use_backend`` blocks; ``None`` clears the choice
  (configuration decides again)."""
  global _default
  _default = None if name is None else _canonical_name(name, "set_backend")


@contextlib.contextmanager
def use_backend(name):
  """Run the block with backend ``name`` (this thread only; nests; restored even when the
  block raises)."""
  global _blocks
  name = _canonical_name(name, "use_backend")
  stack = _local.stack
  stack.append(name)
  with _blocks_lock:
    _blocks += 1
  try:
    yield
  finally:
    stack.pop()
    with _blocks_lock:
      _blocks -= 1


# --- the lazy proxies ------------------------------------------------------------------------

class NumpyBackend:
  """NumPy functions of the active backend: ``hlox.numpy`` on hlox, NumPy itself on NumPy.
  Each attribute access looks the backend up again, so a later switch applies."""
  __slots__ = ()

  # __getattribute__ rather than __getattr__: every name is forwarded, so skipping the
  # failed normal lookup (and its AttributeError) saves most of the proxy's cost.
  def __getattribute__(self, attr):
    return getattr(_table()["np"], attr)

  def __dir__(self):
    return dir(_table()["np"])

  def __repr__(self):
    return f"<fastmath.numpy proxy for the {_active_name()!r} backend>"


numpy = NumpyBackend()


class RandomBackend:
  """Random numbers of the active backend (threefry keys on every backend: the NumPy
  backend gives the hlox backend's bits)."""
  __slots__ = ()

  def get_prng(self, seed):
    """A PRNG key from an integer ``seed`` (TypeError for a non-scalar seed)."""
    if np.ndim(seed):
      raise TypeError(f"get_prng: the seed must be a scalar, got an array of shape "
                      f"{np.shape(seed)}")
    dtype = getattr(seed, "dtype", None)
    if isinstance(seed, (float, complex)) or dtype is not None and not (
        np.issubdtype(np.dtype(dtype), np.integer) or np.dtype(dtype) == np.bool_):
      raise TypeError(f"get_prng: the seed must be an integer, got "
                      f"{type(seed).__name__} {seed!r}")
    return _table()["random_get_prng"](seed)

  def split(self, prng, num=2):
    """``num`` new keys from ``prng``."""
    return _table()["random_split"](prng, num)

  def fold_in(self, rng, data):
    """A new key from ``rng`` and the integer ``data``."""
    return _table()["random_fold_in"](rng, data)

  def uniform(self, *args, **kwargs):
    """``uniform(key, shape=(), dtype=None, minval=0., maxval=1.)``."""
    return _table()["random_uniform"](*args, **kwargs)

  def randint(self, *args, **kwargs):
    """``randint(key, shape, minval, maxval, dtype=int32)``."""
    return _table()["random_randint"](*args, **kwargs)

  def normal(self, *args, **kwargs):
    """``normal(key, shape=(), dtype=None)``."""
    return _table()["random_normal"](*args, **kwargs)

  def bernoulli(self, *args, **kwargs):
    """``bernoulli(key, p=0.5, shape=None)``."""
    return _table()["random_bernoulli"](*args, **kwargs)

  def __repr__(self):
    return f"<fastmath.random proxy for the {_active_name()!r} backend>"


random = RandomBackend()


# --- operations ------------------------------------------------------------------------------

def logsumexp(*args, **kwargs):
  """``log(sum(exp(a)))`` along an axis, computed without overflow."""
  return _table()["logsumexp"](*args, **kwargs)


def expit(*args, **kwargs):
  """The logistic sigmoid."""
  return _table()["expit"](*args, **kwargs)


def sigmoid(*args, **kwargs):
  """The logistic sigmoid (``expit``)."""
  return _table()["expit"](*args, **kwargs)


def erf(*args, **kwargs):
  """The error function."""
  return _table()["erf"](*args, **kwargs)


def conv(inp, fltr, window_strides, padding, dimension_numbers, filter_dilation=None,
         **kwargs):
  """A general convolution (cross-correlation) with letter dimension numbers such as
  ``('NHWC', 'HWIO', 'NHWC')``; input dilation is not supported (as in Trax)."""
  for key in ("lhs_dilation", "input_dilation", "inp_dilation"):
    if key in kwargs:
      value = kwargs.pop(key)
      if value is not None and any(int(d) != 1 for d in value):
        raise ValueError(f"fastmath.conv does not support input dilation ({key}={value!r}), "
                         f"as in Trax; use hlox.lax.conv_general_dilated")
  if kwargs:
    raise TypeError(f"fastmath.conv got unexpected keyword arguments {sorted(kwargs)}")
  return _table()["conv"](inp, fltr, window_strides, padding, dimension_numbers,
                          filter_dilation)


def avg_pool(x, pool_size, strides, padding):
  """Average pooling over NHWC-style windows: each window's sum divided by the number of
  real elements it covers (so 'SAME' padding does not dilute the edges)."""
  return _table()["avg_pool"](x, pool_size, strides, padding)


def max_pool(x, pool_size, strides, padding):
  """Max pooling over NHWC-style windows."""
  return _table()["max_pool"](x, pool_size, strides, padding)


def sum_pool(x, pool_size, strides, padding):
  """Sum pooling over NHWC-style windows."""
  return _table()["sum_pool"](x, pool_size, strides, padding)


def top_k(*args, **kwargs):
  """The ``k`` largest entries along the last axis and their indices."""
  return _table()["top_k"](*args, **kwargs)


def sort_key_val(*args, **kwargs):
  """Sorts keys along a dimension and applies the same permutation to values."""
  return _table()["sort_key_val"](*args, **kwargs)


def scan(*args, **kwargs):
  """``lax.scan``: a loop carrying state, stacking per-step outputs."""
  return _table()["scan"](*args, **kwargs)


def map(*args, **kwargs):  # noqa: A001  (Trax's name)
  """Maps a function over the leading axis of arrays."""
  return _table()["map"](*args, **kwargs)


def _is_integer_bound(v):
  if isinstance(v, bool):
    return False
  if isinstance(v, (int, np.integer)):
    return True
  dtype = getattr(v, "dtype", None)
  try:
    return dtype is not None and np.issubdtype(np.dtype(dtype), np.integer) and \
        not np.shape(v)
  except TypeError:
    return False


def fori_loop(lower, upper, body_fn, init_val):
  """``val = init_val; for i in range(lower, upper): val = body_fn(i, val)``; a backend
  without its own ``fori_loop`` runs it as a ``scan`` (Trax's fallback)."""
  for label, v in (("lower", lower), ("upper", upper)):
    if not _is_integer_bound(v):
      raise TypeError(f"fori_loop: {label} must be a scalar integer, got "
                      f"{type(v).__name__} {v!r}")
  table = _table()
  if "fori_loop" in table:
    return table["fori_loop"](lower, upper, body_fn, init_val)

  def step(carry, _):
    i, x = carry
    return (i + 1, body_fn(i, x)), None
  (_, result), _ = table["scan"](step, (lower, init_val), None, length=upper - lower)
  return result


def remat(*args, **kwargs):
  """Recomputes the function in the backward pass instead of saving its intermediates."""
  return _table()["remat"](*args, **kwargs)


def cond(*args, **kwargs):
  """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``."""
  return _table()["cond"](*args, **kwargs)


def lt(*args, **kwargs):
  """Elementwise ``<`` (for backends whose arrays do not override it)."""
  return _table()["lt"](*args, **kwargs)


def index_update(x, idx, y):
  """``x`` with ``x[idx] = y`` (a new array; out-of-bounds updates are dropped)."""
  return _table()["index_update"](x, idx, y)


def index_add(x, idx, y):
  """``x`` with ``y`` added at ``idx`` (a new array)."""
  return _table()["index_add"](x, idx, y)


def index_min(x, idx, y):
  """``x`` with ``minimum(x[idx], y)`` at ``idx`` (a new array)."""
  return _table()["index_min"](x, idx, y)


def index_max(x, idx, y):
  """``x`` with ``maximum(x[idx], y)`` at ``idx`` (a new array)."""
  return _table()["index_max"](x, idx, y)


def dynamic_slice(*args, **kwargs):
  """A slice at run-time start indices (clamped so the slice stays in bounds)."""
  return _table()["dynamic_slice"](*args, **kwargs)


def dynamic_slice_in_dim(*args, **kwargs):
  """``dynamic_slice`` along one axis."""
  return _table()["dynamic_slice_in_dim"](*args, **kwargs)


def dynamic_update_slice(*args, **kwargs):
  """Writes an update at run-time start indices (clamped)."""
  return _table()["dynamic_update_slice"](*args, **kwargs)


def dynamic_update_slice_in_dim(*args, **kwargs):
  """``dynamic_update_slice`` along one axis."""
  return _table()["dynamic_update_slice_in_dim"](*args, **kwargs)


def stop_gradient(*args, **kwargs):
  """The identity forward; no gradient flows back through it."""
  return _table()["stop_gradient"](*args, **kwargs)


class _JitSwitch:
  jit_disabled = False


class _DisableJit:
  """Returned by ``disable_jit()``: jit is already off; as a context manager it is turned
  back to what it was when the block ends."""

  def __init__(self, previous):
    self._previous = previous

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    _JitSwitch.jit_disabled = self._previous
    return False


def disable_jit():
  """From now on ``fastmath.jit(f)`` returns ``f`` itself (debugging); ``with
  fastmath.disable_jit():`` limits that to the block."""
  previous = _JitSwitch.jit_disabled
  _JitSwitch.jit_disabled = True
  return _DisableJit(previous)


def jit(*args, **kwargs):
  """Compiles the function with the active backend (the identity on NumPy)."""
  if _JitSwitch.jit_disabled:
    return args[0] if args else (lambda f: f)
  return _table()["jit"](*args, **kwargs)


def vmap(*args, **kwargs):
  """The function vectorized over a batch axis."""
  return _table()["vmap"](*args, **kwargs)


def grad(*args, **kwargs):
  """The gradient of a function (a new function)."""
  return _table()["grad"](*args, **kwargs)


def value_and_grad(*args, **kwargs):
  """A function returning ``(value, grads)``, or ``((value, aux), grads)`` with
  ``has_aux=True``."""
  table = _table()
  if "value_and_grad" in table:
    return table["value_and_grad"](*args, **kwargs)
  fn, grad_fn = args[0], table["grad"](*args, **kwargs)
  if not kwargs.get("has_aux", False):
    def val_and_grad(*a, **k):
      return fn(*a, **k), grad_fn(*a, **k)
    return val_and_grad

  def val_and_grad_aux(*a, **k):
    g, aux = grad_fn(*a, **k)
    value, _ = fn(*a, **k)
    return (value, aux), g
  return val_and_grad_aux


def vjp(*args, **kwargs):
  """``(out, vjp_fn)`` for a function at the given primals."""
  return _table()["vjp"](*args, **kwargs)


def custom_grad(*args, **kwargs):
  """``custom_grad(f_vjp, f_original)``: ``f_original`` differentiated by ``f_vjp``."""
  return _table()["custom_grad"](*args, **kwargs)


def custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=()):
  """``f`` with the custom VJP ``f_fwd(*args) -> (out, residual)``, ``f_bwd(residual, g)``
  returning one cotangent per argument (``None`` for a zero one).

  A backend without its own ``custom_vjp`` gets it from ``custom_grad`` (Trax's fallback),
  which supports non-differentiable arguments only at the front (``(0,)``, ``(0, 1)``...).
  """
  table = _table()
  if "custom_vjp" in table:
    return table["custom_vjp"](f, f_fwd, f_bwd, nondiff_argnums)
  nondiff_argnums = tuple(nondiff_argnums)
  if nondiff_argnums != tuple(range(len(nondiff_argnums))):
    raise ValueError(f"custom_vjp: on the {table['name']!r} backend nondiff_argnums must be "
                     f"a prefix of the arguments, like (0,) or (0, 1), got {nondiff_argnums}")
  n = len(nondiff_argnums)
  make = table["custom_grad"]
  if not n:
    def f_vjp(*args):
      out, residual = f_fwd(*args)
      return out, lambda g: f_bwd(residual, g)
    return make(f_vjp, f)

  def f_joint(*args):
    fixed = list(args[:n])

    def f_diff(*diff_args):
      return f(*fixed, *diff_args)

    def f_vjp(*diff_args):
      out, residual = f_fwd(*fixed, *diff_args)
      return out, lambda g: tuple(f_bwd(residual, g))[n:]
    return make(f_vjp, f_diff)(*args[n:])
  return f_joint


def pmap(*args, **kwargs):
  """The function mapped over devices along the leading axis."""
  return _table()["pmap"](*args, **kwargs)


def psum(*args, **kwargs):
  """The sum over a mapped axis, inside ``pmap``/``vmap``."""
  return _table()["psum"](*args, **kwargs)


def abstract_eval(*args, **kwargs):
  """``abstract_eval(f)``: a function from argument signatures to ``ShapeDtype`` outputs."""
  return _table()["abstract_eval"](*args, **kwargs)


def dataset_as_numpy(*args, **kwargs):
  """The elements of a dataset (any iterable of pytrees, or a ``tf.data.Dataset``) as
  NumPy arrays."""
  return _table()["dataset_as_numpy"](*args, **kwargs)


def global_device_count(*args, **kwargs):
  """The number of devices over all processes."""
  return _table()["global_device_count"](*args, **kwargs)


def local_device_count(*args, **kwargs):
  """The number of devices of this process."""
  return _table()["local_device_count"](*args, **kwargs)


class _BackendDict(dict):
  """Trax's ``_backend_dict``: every Backend member with its table (loaded on access)."""

  def __getitem__(self, key):
    return _load(_canonical_name(key, "_backend_dict"))

  def items(self):
    return [(b, self[b]) for b in Backend]

  def values(self):
    return [self[b] for b in Backend]


_backend_dict = _BackendDict({b: b.value for b in Backend})

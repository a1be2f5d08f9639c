"""Helpers shared by the ``hlox.numpy`` modules: argument checks, promotion, broadcasting."""
from __future__ import annotations

import operator
import warnings

import numpy as np

from hlox import lax
from hlox.lax import elementwise as _ew
from hlox.config import config
from hlox.core import dtypes, source_info
from hlox.core.tracer import Tracer, get_aval
from hlox.errors import ConcretizationTypeError
from hlox.numpy.conversion import asarray
from hlox.core.refs import AbstractRef
from hlox.runtime.array import Array


_ARRAYLIKE = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)


def is_arraylike(x) -> bool:
  # Objects with ``__jax_array__`` are arrays by duck typing (JAX's protocol).
  return isinstance(x, _ARRAYLIKE) or hasattr(x, "__jax_array__")


def check_arraylike(name: str, *args) -> None:
  """Arrays, NumPy values, Python scalars, or objects that turn themselves into arrays
  (``__jax_array__``, which ``ensure_array`` calls); a TypeError for anything else."""
  for i, x in enumerate(args):
    if (not is_arraylike(x) and not hasattr(x, "__jax_array__")) or (
        isinstance(x, Tracer) and type(x.aval) is AbstractRef):  # a reference is no array
      if dtypes.extended_dtype_of(x) is not None:
        raise TypeError(_extended_dtype_message(name, args))
      raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x)} "
                      f"at position {i}.")


# The lax primitives of the ufuncs whose names differ (JAX's messages name the primitive).
_LAX_NAMES = {"negative": "neg", "subtract": "sub", "multiply": "mul", "divide": "div",
              "true_divide": "div", "power": "pow", "less": "lt", "less_equal": "le",
              "greater": "gt", "greater_equal": "ge", "equal": "eq", "not_equal": "ne",
              "absolute": "abs", "bitwise_not": "not", "invert": "not", "bitwise_and": "and",
              "bitwise_or": "or", "bitwise_xor": "xor", "left_shift": "shift_left",
              "right_shift": "shift_right_arithmetic", "remainder": "rem", "mod": "rem"}


def _extended_dtype_message(name, args) -> str:
  """JAX's refusal of typed PRNG keys (extended dtypes) in an operation on numbers."""
  names = [str(dtypes.extended_dtype_of(x) or dtypes.dtype_of(x)) for x in args]
  if len(set(names)) > 1:
    return f"{name} does not accept dtypes {', '.join(names)}."
  op = _LAX_NAMES.get(name, name)
  if len(args) == 1:
    return f"{op} does not accept dtype {names[0]}."
  return f"{op} does not accept dtype {names[0]} at position 0."


def from_jax_array(x):
  """``x`` converted by ``asarray`` when it turns itself into an array (JAX's
  ``__jax_array__`` protocol, which ``asarray`` checks the result of); anything else as it
  is. For code that inspects an argument (its dtype, its concrete value, whether it is
  traced) before converting it."""
  if not isinstance(x, _ARRAYLIKE) and hasattr(x, "__jax_array__"):
    return asarray(x)
  return x


def ensure_array(x):
  """``x`` as something ``lax`` accepts: Python scalars and NumPy values pass through."""
  if isinstance(x, (Array, Tracer)):
    return x
  if isinstance(x, (list, tuple)) or hasattr(x, "__jax_array__"):
    return asarray(x)
  return x


def promote_dtypes(*args):
  """Convert arguments to their common (JAX-promoted) dtype, keeping weak types."""
  if len(args) < 2:
    return list(args)
  dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  return [_convert(x, dtype, weak) for x in args]


def _convert(x, dtype, weak):
  aval = get_aval(x)
  if aval.dtype == dtype and (aval.weak_type == weak or not hasattr(x, "aval")):
    return x
  return lax.convert_element_type(x, dtype, weak_type=weak)


def promote_dtypes_inexact(*args):
  """Promote, then turn integer/bool results into JAX's inexact dtype of the same width
  (``dtypes.to_inexact_dtype``)."""
  dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  inexact = dtypes.to_inexact_dtype(dtype)
  return [_convert(x, dtypes.canonicalize_explicit(inexact), weak) for x in args]


def promote_dtypes_numeric(*args):
  dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  if dtype == dtypes.bool_:
    dtype, weak = dtypes.to_numeric_dtype(dtype), False
  return [_convert(x, dtype, weak) for x in args]


def broadcast_shapes(*shapes) -> tuple:
  """NumPy broadcasting of shapes; ValueError naming the shapes when incompatible."""
  ndim = max((len(s) for s in shapes), default=0)
  result = []
  for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
    non_one = {d for d in dims if d != 1}
    if len(non_one) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: "
                       f"shapes={[tuple(s) for s in shapes]}")
    result.append(non_one.pop() if non_one else 1)
  return tuple(result)


def broadcast_to_shape(x, shape):
  aval = get_aval(x)
  shape = tuple(shape)
  if aval.shape == shape:
    return x
  if aval.ndim > len(shape):
    raise ValueError(f"cannot broadcast an array of shape {aval.shape} to shape {shape}")
  lead = len(shape) - aval.ndim
  for d_in, d_out in zip(aval.shape, shape[lead:]):
    if d_in not in (1, d_out):
      raise ValueError(f"cannot broadcast an array of shape {aval.shape} to shape {shape}")
  return lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def promote_shapes(name: str, *args):
  """Give every non-scalar argument the same rank (leading 1s), as NumPy broadcasting does;
  ``lax`` then broadcasts size-1 dimensions itself."""
  shapes = [get_aval(x).shape for x in args]
  nonscalar = [s for s in shapes if s]
  if len({len(s) for s in nonscalar}) <= 1:
    return list(args)
  if config._values["numpy_rank_promotion"] != "allow" and source_info.called_by_user():
    _rank_promotion_warning_or_error(name, shapes)
  try:
    result = broadcast_shapes(*shapes)
  except ValueError:
    raise ValueError("Incompatible shapes for broadcasting: "
                     f"shapes={[tuple(s) for s in shapes]}") from None
  ndim = len(result)
  out = []
  for x, s in zip(args, shapes):
    if s and len(s) < ndim:
      x = lax.reshape(x, (1,) * (ndim - len(s)) + tuple(s))
    out.append(x)
  return out


def _rank_promotion_warning_or_error(name, shapes):
  # JAX's texts (people search them), with the operation's name.
  shapes = " ".join(str(tuple(s)) for s in shapes)
  if config._values["numpy_rank_promotion"] == "warn":
    warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes {shapes}. "
                  "Set the jax_numpy_rank_promotion config option to 'allow' to disable "
                  "this warning (hlox.numpy_rank_promotion('allow')).", stacklevel=4)
  else:
    raise ValueError(f"Operands could not be broadcast together for {name} on shapes "
                     f"{shapes} and with the config option jax_numpy_rank_promotion='raise'. "
                     "Make the ranks equal explicitly (e.g. with expand_dims or reshape), or "
                     "set the option to 'allow'.")


def _already_promoted(args, inexact: bool) -> bool:
  """Fast path for the common case: arrays that already share shape, dtype and weak type."""
  first = getattr(args[0], "aval", None)
  if first is None or (inexact and first.dtype not in _inexact_dtypes):
    return False
  if first.weak_type and first.dtype == dtypes.bool_:
    return False  # promotion makes a weak bool strong (bool has no weak kind)
  for x in args[1:]:
    aval = getattr(x, "aval", None)
    if aval is not first:  # avals are interned: identity means same shape/dtype/weak type
      return False
  return True


_inexact_dtypes = frozenset(d for d in dtypes.all_dtypes if dtypes.is_inexact(d))


def promote_args(name: str, *args):
  """Check, promote dtypes and ranks: ready for an elementwise lax op."""
  if _already_promoted(args, False):
    return args
  check_arraylike(name, *args)
  args = [ensure_array(a) for a in args]
  return promote_shapes(name, *promote_dtypes(*args))


def promote_args_inexact(name: str, *args):
  if _already_promoted(args, True):
    return args
  check_arraylike(name, *args)
  args = [ensure_array(a) for a in args]
  return promote_shapes(name, *promote_dtypes_inexact(*args))


def promote_args_numeric(name: str, *args):
  check_arraylike(name, *args)
  args = [ensure_array(a) for a in args]
  return promote_shapes(name, *promote_dtypes_numeric(*args))


def canonicalize_axis(axis, ndim: int, name: str) -> int:
  """One ``axis`` (an integer, negative from the end) as a non-negative int."""
  try:
    axis = operator.index(axis)
  except TypeError:
    raise TypeError(f"{name}: axis must be an integer, got {axis!r}") from None
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def canonicalize_axis_tuple(axis, ndim, name):
  """``axis`` (None, int or tuple) as a sorted tuple of non-negative ints."""
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (int, np.integer)):
    axis = (axis,)
  out = []
  for a in axis:
    a = int(a)
    if not -ndim <= a < ndim:
      raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {ndim}")
    out.append(a % ndim)
  if len(set(out)) != len(out):
    raise ValueError(f"{name}: repeated axis in {tuple(axis)}")
  return tuple(sorted(out))


def index_dtype():
  """The dtype of index results (int32, int64 under x64)."""
  return dtypes.default_int_dtype()


def int_dtype_for_dim(n: int) -> np.dtype:
  """The dtype of positions along a dimension of size ``n`` (``searchsorted``'s result):
  int32 whenever it can hold ``n``, also with x64 on (as JAX)."""
  if n <= np.iinfo(np.int32).max:
    return dtypes.int32
  if not dtypes.x64_enabled():
    # int64 is needed but unavailable: as JAX, warn about the truncated request, then fail
    # rather than return positions that wrap around.
    warnings.warn("Explicitly requested dtype int64 requested in searchsorted is not "
                  "available, and will be truncated to dtype int32. To enable more dtypes, "
                  "set the jax_enable_x64 configuration option.", UserWarning, stacklevel=3)
    raise OverflowError(f"Python integer {n} out of bounds for int32: positions along a "
                        "dimension this long need int64 (enable x64)")
  return dtypes.int64


def concrete_value(name, x):
  """The NumPy value of ``x``; an error naming ``name`` when it is traced."""
  x = from_jax_array(x)
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(x, f"{name} needs a concrete value here (its result "
                                    "shape depends on it); pass size= or call it outside jit")
    return np.asarray(value)
  return np.asarray(x)


def fuse_functions(namespace: dict, names, static_argnames: dict, default_static=(),
                   skip=(), staged=()) -> None:
  """Replace the functions ``names`` of a module ``namespace`` by ``api.eager_fused``
  versions: eagerly one cached executable per call signature (JAX jit-wraps its ``jnp``
  functions the same way). ``static_argnames[name]`` (else ``default_static``, keeping the
  names ``name`` takes) are compile-time parameters.

  Traced, a function is inlined, unless it is in ``staged``: the functions that JAX jits
  without ``inline=True``, which show in its jaxprs as a nested ``jit`` equation. ``staged``
  names them, or maps each to the name that equation carries (JAX's function's name)."""
  import inspect
  from hlox.api import eager_fused
  if not isinstance(staged, dict):
    staged = {name: name for name in staged}
  for name in names:
    fun = namespace.get(name)
    if name in skip or not inspect.isfunction(fun):
      continue
    static = static_argnames.get(name)
    if static is None:
      params = inspect.signature(fun).parameters
      static = tuple(n for n in default_static if n in params
                     and params[n].kind is not inspect.Parameter.POSITIONAL_ONLY)
    namespace[name] = eager_fused(fun, static_argnames=static, call_name=staged.get(name))



# --- the three-argument ``where`` and its helpers (JAX's ``util._where``) ----------------

_PY_SCALARS = (bool, int, float, complex)


def _strong_scalars(args):
  """After promotion to a strong dtype, Python scalars become NumPy scalars of that dtype
  (JAX converts them too), so that a result computed from them alone is strong as well."""
  for a in args:
    if type(a) in _PY_SCALARS:
      break
  else:
    return args  # the common case: arrays only
  if all(type(a) in _PY_SCALARS or get_aval(a).weak_type for a in args):
    return list(args)
  return [np.asarray(a, dtype=get_aval(a).dtype)[()] if type(a) in _PY_SCALARS else a
          for a in args]

def _dtype(x):
  return get_aval(x).dtype

def _const(x, value):
  """``value`` as a scalar of ``x``'s dtype that keeps ``x``'s weak type (``lax`` requires
  equal dtypes)."""
  return _ew._const(x, value)


def _strong_const(x, value):
  """``value`` as a NumPy scalar of ``x``'s dtype: unlike ``_const``, a comparison with it
  gives a strongly typed result (as JAX's tests against constants do)."""
  return np.asarray(value, dtype=_dtype(x))[()]


def _jit_const(x, value):
  """The constant JAX's jitted ``jnp`` functions use: it keeps a weak ``x``'s weak type only
  when ``x`` is 0-d (JAX 0.10: ``hypot(3., 4.)`` is weak, ``hypot(full(2, 3.), 4.)`` is
  not)."""
  return _const(x, value) if get_aval(x).ndim == 0 else _strong_const(x, value)

def _to_bool(x):
  return x if _dtype(x) == dtypes.bool_ else lax.ne(x, _jit_const(x, 0))


def _where(condition, x, y):
  """Three-argument ``where`` after the argument checks: promote, broadcast, select."""
  x, y = _strong_scalars(promote_dtypes(x, y))
  condition = _to_bool(condition)
  shape = broadcast_shapes(*(get_aval(a).shape for a in (condition, x, y)))
  x, y = (broadcast_to_shape(a, shape) for a in (x, y))
  if get_aval(condition).ndim:  # a scalar condition selects whole arrays (as in JAX)
    condition = broadcast_to_shape(condition, shape)
  return lax.select(condition, x, y)

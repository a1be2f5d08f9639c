"""Dtypes: canonicalization (32-bit unless x64 is on) and JAX's type-promotion lattice.

Python scalars are *weakly typed*: they take part in promotion as the abstract kinds ``i*``,
``f*`` and ``c*``, which sit below every concrete type of their kind on the lattice, so that
``float32_array * 2.0`` stays float32 while ``int32_array + 1.5`` becomes float32.
"""
from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np

from hlox.config import config
from hlox.core import source_info

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e4m3b11fnuz = np.dtype(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz)
# The newer narrow floats (OCP/MX formats): in the promotion lattice (each promotes with no
# other dtype, as in JAX) and transferable; few backends compute with them.
float8_e3m4 = np.dtype(ml_dtypes.float8_e3m4)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = np.dtype(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = np.dtype(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = np.dtype(ml_dtypes.float6_e3m2fn)
narrow_float_dtypes = (float8_e3m4, float8_e4m3, float8_e8m0fnu, float4_e2m1fn,
                       float6_e2m3fn, float6_e3m2fn)
int4, uint4 = np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)
int2, uint2 = np.dtype(ml_dtypes.int2), np.dtype(ml_dtypes.uint2)
# Integers narrower than a byte (JAX's "intN" types): one element per byte on the host, XLA
# packs them. Each promotes with nothing but itself and weak ints, as in JAX.
narrow_int_dtypes = frozenset((int2, uint2, int4, uint4))
# float0 is the dtype of tangents of integer and boolean values (as in JAX): zero-size items.
float0 = np.dtype([("float0", np.void, 0)])

float8_dtypes = (float8_e4m3fn, float8_e5m2, float8_e4m3b11fnuz, float8_e4m3fnuz, float8_e5m2fnuz)
int_dtypes = (int2, int4, int8, int16, int32, int64)
uint_dtypes = (uint2, uint4, uint8, uint16, uint32, uint64)
float_dtypes = (*float8_dtypes, bfloat16, float16, float32, float64)
complex_dtypes = (complex64, complex128)
all_dtypes = (bool_, *int_dtypes, *uint_dtypes, *float_dtypes, *complex_dtypes)

_custom_floats = {bfloat16, *float8_dtypes, *narrow_float_dtypes}


class extended(np.generic):
  """Abstract scalar type of the extended dtypes (dtypes that are not NumPy's, such as typed
  PRNG keys); only for ``issubdtype`` checks."""


class prng_key(extended):
  """Abstract scalar type of typed PRNG key dtypes (``issubdtype(k.dtype, prng_key)``)."""


class ExtendedDType:
  """Base class of the extended dtype objects (a typed key's ``key<fry>``): ``type`` is the
  scalar type under ``extended`` that ``issubdtype`` sees, ``_rules`` how the dtype maps to
  arrays XLA knows (the typed-key implementation for keys). A plain class, not an ABC, so
  that ``isinstance`` on its subclasses stays a C-level check."""
  __slots__ = ()
  type: type = extended
  _rules = None


def user_rules(dtype):
  """The ``_rules`` of a user-defined extended dtype (JAX's protocol: ``physical_element_aval``,
  ``convert_from``/``convert_to``, ``add``, ``zero``, ``tangent_dtype``, ``full``), else
  None. Typed PRNG keys have none here: hlox traces them as their uint32 words."""
  if isinstance(dtype, np.dtype):
    return None
  rules = getattr(dtype, "_rules", None)
  if rules is None or issubclass(getattr(dtype, "type", object), prng_key):
    return None
  return rules


def supports_inf(dtype) -> bool:
  """Whether ``dtype`` can hold infinity (inexact dtypes, except the float8 formats whose
  encodings have no infinity)."""
  dtype = np.dtype(dtype)
  if dtype in (float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2fnuz):
    return False
  return np.issubdtype(dtype, np.inexact) or dtype in _custom_floats


_ABSTRACT_TYPES = (np.generic, np.number, np.inexact, np.floating, np.complexfloating,
                   np.integer, np.signedinteger, np.unsignedinteger, np.flexible,
                   np.character)


def _ml_category(dtype):
  """The NumPy abstract class an ml_dtypes dtype belongs under (NumPy knows none)."""
  if dtype in _custom_floats:
    return np.floating
  if dtype == int4:
    return np.signedinteger
  if dtype == uint4:
    return np.unsignedinteger
  name = dtype.name
  if name.startswith(("float8", "float6", "float4")):
    return np.floating
  if name in ("int1", "int2"):
    return np.signedinteger
  if name in ("uint1", "uint2"):
    return np.unsignedinteger
  return None


def issubdtype(a, b) -> bool:
  """NumPy's ``issubdtype`` that also knows the ml_dtypes floats are floating and int4 integer,
  and extended dtypes (PRNG keys: ``issubdtype(key.dtype, prng_key)``). Either argument may
  be a dtype, a scalar type (abstract ones included: ``np.generic``, ``np.floating``) or a
  dtype name."""
  if isinstance(getattr(a, "type", None), type) and issubclass(a.type, extended):
    if isinstance(b, type) and issubclass(b, np.generic):
      return issubclass(a.type, b)
    return a == b
  if isinstance(a, type) and issubclass(a, extended):
    return isinstance(b, type) and issubclass(b, np.generic) and issubclass(a, b)
  if isinstance(b, type) and issubclass(b, extended):
    return False
  if isinstance(a, type) and a in _ABSTRACT_TYPES:  # a category: only within a category
    return isinstance(b, type) and issubclass(b, np.generic) and issubclass(a, b)
  a = np.dtype(a)
  if isinstance(b, type) and b in _ABSTRACT_TYPES:
    category = _ml_category(a)
    if category is not None:
      return issubclass(category, b)
    return np.issubdtype(a, b)
  try:
    return a == np.dtype(b)
  except TypeError:
    return False


def is_float(dtype) -> bool:
  return np.dtype(dtype) in _float_set

def is_complex(dtype) -> bool:
  return np.dtype(dtype).kind == "c"

def is_inexact(dtype) -> bool:
  dtype = np.dtype(dtype)
  return dtype in _float_set or dtype.kind == "c"

def is_int(dtype) -> bool:
  return np.dtype(dtype) in _int_set

def is_signed_int(dtype) -> bool:
  return np.dtype(dtype) in _sint_set

def is_unsigned_int(dtype) -> bool:
  return np.dtype(dtype) in _uint_set

def is_bool(dtype) -> bool:
  return np.dtype(dtype) == bool_

_float_set = frozenset((*float_dtypes, *narrow_float_dtypes))
_sint_set = frozenset(int_dtypes)
_uint_set = frozenset(uint_dtypes)
_int_set = _sint_set | _uint_set


def finfo(dtype):
  """Machine limits of a floating point dtype.

  It is ``ml_dtypes.finfo``, which extends NumPy's ``finfo`` to bfloat16 and the float8 types. The
  object has NumPy's attributes: ``bits``, ``eps``, ``max``, ``min``, ``tiny``
  (``smallest_normal``), ``smallest_subnormal``, ``resolution``, ``precision``, ``dtype``, and so
  on.

  Args:
    dtype: a floating point or complex dtype, scalar type, dtype name or array (a complex dtype
      gives the limits of its real parts).

  Returns:
    An ``ml_dtypes.finfo`` (a ``numpy.finfo`` subclass) describing ``dtype``.

  Examples:
    >>> print(jnp.finfo(jnp.float32).eps)
    1.1920929e-07
    >>> jnp.finfo(jnp.bfloat16)
    finfo(resolution=0.0100098, min=-3.38953e+38, max=3.38953e+38, dtype=bfloat16)

  See also:
    :func:`hlox.numpy.iinfo`.
  """
  return ml_dtypes.finfo(dtype)

def iinfo(dtype):
  """Machine limits of an integer dtype.

  It is ``ml_dtypes.iinfo``, which extends NumPy's ``iinfo`` to int4 and uint4. The object has the
  attributes ``bits``, ``min``, ``max``, ``dtype`` and ``kind``.

  Args:
    dtype: an integer dtype, scalar type, dtype name or array.

  Returns:
    An ``ml_dtypes.iinfo`` describing ``dtype``.

  Examples:
    >>> jnp.iinfo(jnp.int8)
    iinfo(min=-128, max=127, dtype=int8)
    >>> jnp.iinfo(jnp.uint16).max
    65535

  See also:
    :func:`hlox.numpy.finfo`.
  """
  return ml_dtypes.iinfo(dtype)


# --- canonicalization -------------------------------------------------------------------

_to_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def x64_enabled() -> bool:
  return config._values["enable_x64"]


def canonicalize_dtype(dtype) -> np.dtype:
  """The dtype hlox stores for ``dtype``: 64-bit types become 32-bit unless x64 is on."""
  dtype = np.dtype(dtype)
  if config._values["enable_x64"]:
    return dtype
  return _to_32.get(dtype, dtype)


_PY_SCALAR_TYPES = {bool: lambda: bool_, int: lambda: default_int_dtype(),
                    float: lambda: default_float_dtype(), complex: lambda: default_complex_dtype()}


def check_user_dtype(dtype, name: str | None = None, *, user_only: bool = False) -> np.dtype:
  """The dtype to use for a ``dtype=`` the user passed to ``name`` (a NumPy dtype, a scalar
  type such as ``np.float32``, a string, or a Python type, which means its default dtype).

  A 64-bit dtype asked for while x64 is off goes by the ``explicit_x64_dtypes`` option (as in
  JAX): 'warn' truncates it to 32 bits with a UserWarning at the user's line, 'error' raises
  ValueError, 'allow' keeps it (the value made is 64-bit, as a value made inside
  ``enable_x64()``). Callers test ``dtype is None`` themselves, so a call without a dtype
  costs nothing; with one, the check is two dict reads.

  ``user_only`` (for ``lax`` functions, which hlox's own code calls with dtypes it means to
  be canonicalized): 'warn' and 'error' apply only when the ``lax`` function was called by
  the user's code; otherwise the dtype is canonicalized silently. ('allow' keeps it
  whoever called: hlox.numpy passes its user's dtypes on to ``lax``.)"""
  if isinstance(dtype, type):
    default = _PY_SCALAR_TYPES.get(dtype)
    if default is not None:
      return default()
  dtype = np.dtype(dtype)
  narrow = _to_32.get(dtype)
  if narrow is None or config._values["enable_x64"]:
    return dtype
  mode = config._values["explicit_x64_dtypes"]
  if mode == "allow":
    # Kept, as JAX: a 64-bit value asked for by name (hlox.numpy's functions pass the
    # user's dtype on to ``lax``, whose check must keep it too).
    return dtype
  if user_only and not source_info.lax_called_by_user():
    return narrow
  where = f" requested in {name}" if name else ""
  if mode == "error":
    raise ValueError(f"Explicitly requested dtype {dtype}{where} is not available. To enable "
                     "more dtypes, set the jax_enable_x64 or allow_explicit_x64_dtypes "
                     "configuration options.See "
                     "https://github.com/jax-ml/jax#current-gotchas for more.")
  warnings.warn(f"Explicitly requested dtype {dtype}{where} is not available, and will be "
                f"truncated to dtype {narrow}. To enable more dtypes, set the jax_enable_x64 "
                "configuration option or the JAX_ENABLE_X64 shell environment variable. See "
                "https://github.com/jax-ml/jax#current-gotchas for more.", UserWarning,
                stacklevel=source_info.user_stacklevel())
  return narrow


def explicit_64bit_allowed() -> bool:
  """Whether a 64-bit dtype asked for by name is kept: x64 is on, or
  ``explicit_x64_dtypes`` is 'allow'."""
  return bool(config._values["enable_x64"]) or config._values["explicit_x64_dtypes"] == "allow"


def default_int_dtype() -> np.dtype:
  return int64 if x64_enabled() else int32

def default_float_dtype() -> np.dtype:
  return float64 if x64_enabled() else float32

def default_complex_dtype() -> np.dtype:
  return complex128 if x64_enabled() else complex64


_python_scalar_kinds = {bool: "b", int: "i", float: "f", complex: "c"}


def python_scalar_dtype(x) -> np.dtype:
  """The (canonical) dtype a Python scalar takes as an array."""
  t = type(x)
  if t is bool:
    return bool_
  if t is int:
    return default_int_dtype()
  if t is float:
    return default_float_dtype()
  if t is complex:
    return default_complex_dtype()
  for base in (bool, int, float, complex):  # subclasses such as IntEnum
    if isinstance(x, base):
      return python_scalar_dtype(base(x))
  raise TypeError(f"{type(x).__name__} is not a Python scalar")


def is_python_scalar(x) -> bool:
  return type(x) in _python_scalar_kinds


def is_extended(dtype) -> bool:
  """Whether ``dtype`` is an extended dtype (a typed PRNG key's ``key<fry>``): not NumPy's."""
  t = getattr(dtype, "type", None)
  return isinstance(t, type) and issubclass(t, extended)


def extended_dtype_of(x):
  """The extended dtype of ``x`` (a typed key array, or the dtype itself), else None."""
  dtype = x if is_extended(x) else getattr(x, "dtype", None)
  return dtype if is_extended(dtype) else None


def dtype_of(x) -> np.dtype:
  """Canonical dtype of an array-like value (no tracers: those carry ``aval``)."""
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval.dtype
  if type(x) in _python_scalar_kinds:
    return python_scalar_dtype(x)
  dtype = getattr(x, "dtype", None)
  if dtype is None:
    dtype = np.result_type(x)
  return canonicalize_dtype(dtype)


def is_weakly_typed(x) -> bool:
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval.weak_type
  return type(x) in (int, float, complex)


# --- the promotion lattice ---------------------------------------------------------------

class _WeakKind:
  """A node for the weak (Python-scalar) kinds i*, f*, c* on the lattice."""
  __slots__ = ("name",)

  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return self.name

i_weak, f_weak, c_weak = _WeakKind("int"), _WeakKind("float"), _WeakKind("complex")


def _lattice(x64: bool):
  """Each node mapped to the nodes directly above it (JAX's standard lattice)."""
  up = {
      bool_: [i_weak],
      i_weak: [uint8, int8, *narrow_int_dtypes],
      **{t: [] for t in narrow_int_dtypes},
      uint8: [int16, uint16], uint16: [int32, uint32],
      uint32: [int64, uint64] if x64 else [int32, uint64],
      uint64: [f_weak],
      int8: [int16], int16: [int32], int32: [int64], int64: [f_weak],
      f_weak: [*float8_dtypes, *narrow_float_dtypes, bfloat16, float16, c_weak],
      **{t: [] for t in (*float8_dtypes, *narrow_float_dtypes)},
      bfloat16: [float32], float16: [float32], float32: [float64, complex64],
      float64: [complex128],
      c_weak: [complex64], complex64: [complex128], complex128: [],
  }
  return up


def _upper_bounds(x64):
  up = _lattice(x64)
  ubs = {}
  def visit(node):
    if node in ubs:
      return ubs[node]
    result = {node}
    for parent in up[node]:
      result |= visit(parent)
    ubs[node] = frozenset(result)
    return ubs[node]
  for node in up:
    visit(node)
  return ubs

def _strict_upper_bounds():
  """JAX's strict lattice: a weak kind joins any dtype of its kind or above (weak int ->
  weak float -> weak complex), and distinct strong dtypes join nothing."""
  ints = [*narrow_int_dtypes, uint8, uint16, uint32, uint64, int8, int16, int32, int64]
  floats = [*float8_dtypes, *narrow_float_dtypes, bfloat16, float16, float32, float64]
  complexes = [complex64, complex128]
  ubs = {t: frozenset((t,)) for t in (bool_, *ints, *floats, *complexes)}
  ubs[c_weak] = frozenset((c_weak, *complexes))
  ubs[f_weak] = frozenset((f_weak, *floats)) | ubs[c_weak]
  ubs[i_weak] = frozenset((i_weak, *ints)) | ubs[f_weak]
  return ubs

_UBS = {False: _upper_bounds(False), True: _upper_bounds(True), "strict": _strict_upper_bounds()}


class TypePromotionError(ValueError):
  """No implicit promotion exists between the given dtypes (e.g. float8 with float32)."""


@functools.lru_cache(maxsize=4096)
def _join(nodes: frozenset, x64):
  """The least upper bound of ``nodes``; ``x64`` is True/False (standard lattice) or
  'strict'."""
  ubs = _UBS[x64]
  for n in nodes:
    if n not in ubs:  # StringDType, object...: outside the lattice (JAX's ValueError)
      raise ValueError(f"dtype={n!r} is not a valid dtype for JAX type promotion.")
  common = frozenset.intersection(*(ubs[n] for n in nodes))
  least = (common & nodes) or {c for c in common if common <= ubs[c]}
  if len(least) != 1:
    names = tuple(str(n) for n in nodes)
    if x64 == "strict":  # JAX's text
      raise TypePromotionError(
          f"Input dtypes {names} have no available implicit dtype promotion path when "
          "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
          "output type, or set jax_numpy_dtype_promotion=standard.")
    extra = ""
    small = sorted({ml_dtypes.finfo(n).bits for n in nodes if isinstance(n, np.dtype)
                    and (n in float8_dtypes or n in narrow_float_dtypes)})
    if small:  # JAX's phrase
      extra = (f" {small[0]}-bit floats do not support implicit promotion; convert "
               "explicitly, e.g. x.astype('float32').")
    elif any(n in narrow_int_dtypes for n in nodes):
      extra = (" 1-bit, 2-bit and 4-bit integers do not support implicit promotion; convert "
               "explicitly, e.g. x.astype('int32').")
    raise TypePromotionError(f"Input dtypes {names} have no implicit promotion path.{extra}")
  return next(iter(least))


def _node(dtype, weak):
  if not weak:
    return dtype
  kind = dtype.kind
  if kind in "iu":
    return i_weak
  if kind == "f" or dtype in _custom_floats:
    return f_weak
  if kind == "c":
    return c_weak
  return dtype


def _weak_kind_default(node) -> np.dtype:
  if node is i_weak:
    return default_int_dtype()
  if node is f_weak:
    return default_float_dtype()
  return default_complex_dtype()


def _lattice_key(x64: bool):
  # One dict read: under numpy_dtype_promotion='strict' every join uses the strict lattice.
  return "strict" if config._values["numpy_dtype_promotion"] == "strict" else x64


def _strict_join(nodes, standard_key):
  """The strict lattice's join, for code the user wrote; hlox's own implementations (which
  mix dtypes as JAX's internals do explicitly) get the standard one."""
  try:
    return _join(nodes, "strict")
  except TypePromotionError:
    if source_info.called_by_user(2):
      raise
    return _join(nodes, standard_key)


_PY_TYPE_NODES = ((int, i_weak), (float, f_weak), (complex, c_weak))


def _type_node(t):
  # The Python types int/float/complex stand for weakly typed values, as in JAX (identity,
  # not equality: np.dtype compares equal to them).
  for py, node in _PY_TYPE_NODES:
    if t is py:
      return node
  return np.dtype(t)


def _promote_types_node(a, b, x64=True):
  key = _lattice_key(x64)
  nodes = frozenset((_type_node(a), _type_node(b)))
  return _strict_join(nodes, True) if key == "strict" else _join(nodes, key)


def promote_types(a, b) -> np.dtype:
  """The dtype both ``a`` and ``b`` promote to, canonicalized (the dtype a value of the join
  gets); the Python types ``int``, ``float`` and ``complex`` count as weakly typed
  (``promote_types(complex, complex64)`` is complex64)."""
  joined = _promote_types_node(a, b)
  if isinstance(joined, _WeakKind):
    return _weak_kind_default(joined)
  return canonicalize_dtype(joined)


def promote_types_uncanonical(a, b) -> np.dtype:
  """The dtype that values of dtypes ``a`` and ``b`` are promoted to in a binary operation.

  The promotion follows JAX's type lattice rather than NumPy's: for instance ``int32`` and
  ``float16`` give ``float16``, not ``float64``. As JAX's, the result is the lattice's join as
  it is, not canonicalized: with x64 off ``promote_types(int64, float64)`` is float64 (a value
  made with it is float32), and two Python types give that type's NumPy dtype
  (``promote_types(int, int)`` is int64). The Python types ``int``, ``float`` and ``complex``
  are weakly typed: they take the other dtype when it is of the same kind or higher, so
  ``promote_types(float, bfloat16)`` is bfloat16. Under ``jax_numpy_dtype_promotion='strict'`` implicit promotions between different
  dtypes raise a ``TypePromotionError`` (a ValueError).

  Args:
    a: a dtype, scalar type, dtype name or Python type.
    b: a dtype, scalar type, dtype name or Python type.

  Returns:
    A ``numpy.dtype``.

  Examples:
    >>> jnp.promote_types(jnp.int32, jnp.float16)
    dtype('float16')
    >>> jnp.promote_types(jnp.uint8, jnp.int8)
    dtype('int16')
    >>> jnp.promote_types(float, jnp.bfloat16)
    dtype(bfloat16)

  See also:
    :func:`hlox.numpy.result_type`.
  """
  # The lattice of the current x64 mode (with x64 off, int32 and uint32 join to int32, as
  # in JAX).
  joined = _promote_types_node(a, b, x64_enabled())
  if isinstance(joined, _WeakKind):
    return np.dtype({i_weak: int, f_weak: float}.get(joined, complex))
  return np.dtype(joined)


def float0_error(name: str) -> TypeError:
  """JAX's error for an operation given a float0 array (a tangent of an integer value)."""
  return TypeError(
      f"Called {name} with a float0 array. float0s do not support any operations by design: "
      "they are the tangents of integer and boolean values, which have no non-trivial vector "
      "space. No dtype conversion is done implicitly; np.zeros_like(x, dtype=float) makes a "
      "float zero array of the same shape. A float0 you did not expect may come from a "
      "gradient taken with respect to an integer argument (allow_int=True).")


def canonicalize_explicit(dtype) -> np.dtype:
  """An explicit dtype canonicalized silently: 'allow' keeps its 64 bits (as JAX). For a
  promotion's join, which with x64 off is 64-bit only when an operand is (an Array made so on
  request; NumPy operands count as canonical), and for a ``ShapeDtypeStruct``'s dtype."""
  if config._values["explicit_x64_dtypes"] == "allow":
    return np.dtype(dtype)
  return canonicalize_dtype(dtype)


def result_type_with_weak(dtypes_and_weak) -> tuple[np.dtype, bool]:
  """Join of ``(dtype, weak_type)`` pairs: the dtype and whether the result stays weak."""
  dtypes = [np.dtype(d) for d, _ in dtypes_and_weak]
  weaks = [w for _, w in dtypes_and_weak]
  if len(set(dtypes)) == 1:
    return canonicalize_explicit(dtypes[0]), all(weaks) and dtypes[0] != bool_
  if float0 in dtypes:  # it joins nothing
    raise float0_error("dtype promotion")
  x64 = _lattice_key(x64_enabled())
  if all(weaks) and x64 != "strict":
    # Only Python scalars (or values derived from them): join their concrete dtypes.
    joined = _join(frozenset(dtypes), x64)
    return canonicalize_dtype(joined), joined != bool_
  nodes = frozenset(_node(d, w) for d, w in zip(dtypes, weaks))
  joined = _strict_join(nodes, x64_enabled()) if x64 == "strict" else _join(nodes, x64)
  if isinstance(joined, _WeakKind):
    return canonicalize_dtype(_weak_kind_default(joined)), True
  return canonicalize_explicit(joined), False


def result_type(*args, return_weak_type_flag=False):
  """The dtype of the result of an operation combining all the arguments.

  Arguments are promoted pairwise with :func:`hlox.numpy.promote_types`. Python scalars (and
  weakly typed arrays) are weak: they do not widen the dtype of the arrays they meet, so
  ``result_type(int8_array, 2)`` is int8. The result is canonicalized: with x64 disabled (the
  default) a 64-bit dtype becomes its 32-bit counterpart. None counts as the default float dtype.
  Typed PRNG key dtypes promote with nothing: combining one with anything raises a ValueError.

  Args:
    *args: arrays, scalars, dtypes, scalar types or dtype names; at least one is needed (else
      ValueError).
    return_weak_type_flag: if True, also return whether the result is weakly typed. Default False.

  Returns:
    A ``numpy.dtype``, or a tuple ``(dtype, weak_type)`` when ``return_weak_type_flag`` is True.

  Examples:
    >>> jnp.result_type(jnp.array([1, 2], dtype=jnp.int8), 2)
    dtype('int8')
    >>> jnp.result_type(jnp.int8, 1.0)
    dtype('float32')
    >>> jnp.result_type(jnp.float64)
    dtype('float32')
    >>> jnp.result_type(2.0, return_weak_type_flag=True)
    (dtype('float32'), True)

  See also:
    :func:`hlox.numpy.promote_types`, :func:`hlox.numpy.can_cast`.
  """
  if not args:
    raise ValueError("at least one array or dtype is required")
  try:
    dtype, weak = _result_type(args)
  except TypeError:
    extended_dtypes = [d for d in map(extended_dtype_of, args) if d is not None]
    if not extended_dtypes:
      raise
    # Extended dtypes (typed keys) promote with nothing, not even each other.
    if len(args) > 1:
      raise ValueError(f"dtype={extended_dtypes[0]} is not a valid dtype for JAX type "
                       "promotion.") from None
    dtype, weak = extended_dtypes[0], False
  return (dtype, weak) if return_weak_type_flag else dtype


def _result_type(args):
  pairs = []
  for x in args:
    if x is None:  # as NumPy's result_type(None): the (strong) default float
      pairs.append((canonicalize_dtype(float64), False))
      continue
    if type(x) in (int, float, complex):
      pairs.append((python_scalar_dtype(x), True))
    elif isinstance(x, (np.dtype, type, str)) and not hasattr(x, "aval"):
      pairs.append((canonicalize_dtype(np.dtype(x) if x is not float and x is not int
                                       and x is not complex and x is not bool
                                       else python_scalar_dtype(x(0))), False))
    else:
      pairs.append((dtype_of(x), is_weakly_typed(x)))
  return result_type_with_weak(pairs)


# JAX widens an integer or bool by its width, not to the default float dtype: everything up
# to 32 bits becomes float32 even with x64 on (``exp(int8)`` is float32 in both modes), and
# only the 64-bit integers become float64. (2-bit integers have no entry, as in JAX: they
# stay integers, which ``sin`` and the like refuse.)
_to_inexact = {
    bool_: float32, int4: float32, uint4: float32, int8: float32, uint8: float32,
    int16: float32, uint16: float32, int32: float32, uint32: float32,
    int64: float64, uint64: float64,
}


def to_inexact_dtype(dtype) -> np.dtype:
  """The floating dtype an integer or bool dtype turns into for e.g. ``sin`` or ``mean``
  (canonical: float64 only with x64 on); inexact dtypes are returned unchanged."""
  dtype = np.dtype(dtype)
  inexact = _to_inexact.get(dtype)
  return dtype if inexact is None else canonicalize_dtype(inexact)


def to_numeric_dtype(dtype) -> np.dtype:
  """The numeric dtype a bool turns into for arithmetic such as ``fmod``: int32, also with
  x64 on (as in JAX); other dtypes are returned unchanged."""
  dtype = np.dtype(dtype)
  return int32 if dtype == bool_ else dtype


def scalar_type_of(dtype):
  """``bool``, ``int``, ``float`` or ``complex``: the Python type matching ``dtype``."""
  dtype = np.dtype(dtype)
  if dtype == bool_:
    return bool
  if dtype in _int_set:
    return int
  if dtype.kind == "c":
    return complex
  return float

"""Mutable array references: ``new_ref``, ``get``, ``swap``, ``addupdate``, ``freeze``.

Each primitive has its rules here: abstract evaluation (the reference type is
``core.refs.AbstractRef``), the eager implementation on ``core.refs.Ref`` boxes, JVP (a
differentiated reference is a pair of references, primal and tangent), batching (a batched
reference has a batch axis like any value), the discharge rule (the pure computation the
operation stands for, used by ``interpreters/state_discharge.py`` before lowering and before
transposing) and JAX's printed forms (``c:f32[3] <- b[...]``, ``b[1] <- d``, ``b[...] += d``).

An index is kept per dimension of the reference in the static parameter ``indexer``: a
static int, an ``_Slice(start, size, step)``, or ``Dyn(k)``, the ``k``-th integer-array
operand after the reference (and the value). Reading it applies NumPy's indexing rules.
Arrays' ``[...]``/``.at[...]`` methods (installed by ``hlox.numpy``) do the indexing for the
eager and discharge rules, as a value's methods, never through an import of ``numpy``.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox.lax.dslice import Slice
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import effectful_primitives, pp_rules
from hlox.core.primitive import Primitive
from hlox.core.refs import AbstractRef, Ref, is_ref_aval, set_ref_ops
from hlox.core.tracer import Tracer, get_aval
from hlox.interpreters import ad, batching, state_discharge
from hlox.lax.base import convert_element_type


class _Slice:
  """A static slice of one dimension: ``size`` elements from ``start`` by ``step``."""

  __slots__ = ("start", "size", "step")

  def __init__(self, start: int, size: int, step: int):
    self.start, self.size, self.step = start, size, step

  def _key(self):
    return (self.start, self.size, self.step)

  def __eq__(self, other):
    return type(other) is _Slice and other._key() == self._key()

  def __hash__(self):
    return hash(self._key())

  def as_slice(self) -> slice:
    stop = self.start + self.size * self.step
    return slice(self.start, stop if stop >= 0 else None, self.step)

  def __repr__(self):
    return f"_Slice{self._key()}"


class Dyn:
  """Marks the ``k``-th dynamic index operand."""

  __slots__ = ("k",)

  def __init__(self, k: int):
    self.k = k

  def __eq__(self, other):
    return type(other) is Dyn and other.k == self.k

  def __hash__(self):
    return hash((Dyn, self.k))

  def __repr__(self):
    return f"Dyn({self.k})"


# --- indexers ------------------------------------------------------------------------------

def _is_dynamic(i) -> bool:
  return isinstance(i, (Tracer, np.ndarray)) or (
      hasattr(i, "aval") and not isinstance(i, Ref)) or isinstance(i, (list,))


def normalize_index(shape, idx) -> tuple[tuple, list]:
  """``(indexer, dynamic index operands)`` for a NumPy-style index of a reference of shape
  ``shape``: one entry per dimension (ints, slices, arrays; ``None`` adds nothing, as JAX)."""
  if idx is None:
    idx = ()
  if not isinstance(idx, tuple):
    idx = (idx,)
  idx = tuple(i for i in idx if i is not None)
  n_ellipsis = sum(i is Ellipsis for i in idx)
  if n_ellipsis > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  n_real = len(idx) - n_ellipsis
  if n_real > len(shape):
    raise IndexError(f"Too many indices for array reference: array is {len(shape)}-dimensional,"
                     f" but {n_real} were indexed")
  if n_ellipsis:
    k = idx.index(Ellipsis)
    idx = idx[:k] + (slice(None),) * (len(shape) - n_real) + idx[k + 1:]
  else:
    idx = idx + (slice(None),) * (len(shape) - n_real)
  indexer, dyn = [], []
  for d, i in zip(shape, idx):
    if type(i) is Slice:
      if i.is_dynamic_start or i.is_dynamic_size:
        raise NotImplementedError("a Slice with a traced start or size as an index of a Ref "
                                  "is not supported; index with an integer array instead")
      i = i.as_static_slice()
    if isinstance(i, slice):
      if any(isinstance(b, Tracer) for b in (i.start, i.stop, i.step)):
        raise NotImplementedError("slices of a Ref with traced bounds are not supported; "
                                  "index with an integer array or lax.dynamic_slice its value")
      start, stop, step = i.indices(d)
      indexer.append(_Slice(start, len(range(start, stop, step)), step))
    elif isinstance(i, (bool, np.bool_)):
      raise IndexError("boolean indices are not supported for array references")
    elif isinstance(i, (int, np.integer)):
      i = int(i)
      if not -d <= i < d:
        raise IndexError(f"index {i} is out of bounds for axis with size {d}")
      indexer.append(i + d if i < 0 else i)
    elif _is_dynamic(i):
      aval = get_aval(i) if not isinstance(i, list) else get_aval(np.asarray(i))
      if not (dtypes.is_int(aval.dtype)):
        raise IndexError(f"indices of an array reference must be integers, got {aval.dtype}")
      indexer.append(Dyn(len(dyn)))
      dyn.append(np.asarray(i) if isinstance(i, list) else i)
    else:
      raise IndexError(f"unsupported index for an array reference: {i!r}")
  return tuple(indexer), dyn


def _is_full(shape, indexer) -> bool:
  return all(type(e) is _Slice and e.start == 0 and e.step == 1 and e.size == d
             for d, e in zip(shape, indexer))


def numpy_index(indexer, dyn) -> tuple:
  """The NumPy index the indexer stands for, with the dynamic operands in place."""
  out = []
  for e in indexer:
    if type(e) is _Slice:
      out.append(e.as_slice())
    elif type(e) is Dyn:
      out.append(dyn[e.k])
    else:
      out.append(e)
  return tuple(out)


@functools.lru_cache(maxsize=512)
def _indexed_shape(shape, indexer, dyn_shapes) -> tuple:
  # NumPy's rules on a zero-strided dummy (no memory for the reference's elements).
  dummy = np.lib.stride_tricks.as_strided(np.zeros((), np.bool_), shape, (0,) * len(shape))
  dyn = [np.zeros(s, np.int32) for s in dyn_shapes]
  return dummy[numpy_index(indexer, dyn)].shape


def indexed_aval(ref_aval: AbstractRef, indexer, dyn_avals) -> ShapedArray:
  inner = ref_aval.inner_aval
  shape = _indexed_shape(inner.shape, indexer, tuple(a.shape for a in dyn_avals))
  return ShapedArray(shape, inner.dtype, inner.weak_type)


def _check_ref(name, aval):
  if not is_ref_aval(aval):
    raise ValueError(f"{name} requires a Ref as its first operand, got {aval.str_short()}")


# --- new_ref / freeze ---------------------------------------------------------------------

new_ref_p = Primitive("new_ref")


def _new_ref_abstract_eval(x, *, kind=None, memory_space=None):
  if is_ref_aval(x):
    raise TypeError("references to references are not supported: new_ref got a "
                    f"{x.str_short()}")
  return AbstractRef(x)


def _new_ref_impl(x, *, kind=None, memory_space=None):
  from hlox.core.tracer import check_no_tracers
  check_no_tracers([x])
  return Ref(_device_value(x), get_aval(x))


new_ref_p.def_abstract_eval(_new_ref_abstract_eval)
new_ref_p.def_impl(_new_ref_impl)
effectful_primitives.add(new_ref_p)
_device_value = None  # set by hlox.numpy (asarray): a concrete value as a device array


def set_device_value(fn) -> None:
  global _device_value
  _device_value = fn


freeze_p = Primitive("freeze")
freeze_p.def_abstract_eval(lambda ref: (_check_ref("freeze", ref), ref.inner_aval)[1])


def _freeze_impl(ref):
  return ref._value()  # eagerly JAX leaves the box readable


freeze_p.def_impl(_freeze_impl)
effectful_primitives.add(freeze_p)


# --- get / swap / addupdate ---------------------------------------------------------------

get_p = Primitive("get")


def _get_abstract_eval(ref, *dyn, indexer):
  _check_ref("get", ref)
  return indexed_aval(ref, indexer, dyn)


def _read(value, indexer, dyn):
  if _is_full(get_aval(value).shape, indexer):
    return value
  return value[numpy_index(indexer, dyn)]


def _get_impl(ref, *dyn, indexer):
  return _read(ref._value(), indexer, dyn)


get_p.def_abstract_eval(_get_abstract_eval)
get_p.def_impl(_get_impl)
effectful_primitives.add(get_p)  # a read orders against the writes around it

swap_p = Primitive("swap")


def _swap_abstract_eval(ref, value, *dyn, indexer):
  _check_ref("swap", ref)
  out = indexed_aval(ref, indexer, dyn)
  if value.shape != out.shape or value.dtype != out.dtype:
    raise ValueError(f"Invalid shape or dtype for a Ref update: the indexed reference has type "
                     f"{out.str_short()}, the value {value.str_short()}")
  return out


def _write(value, indexer, dyn, new):
  if _is_full(get_aval(value).shape, indexer):
    return new
  return value.at[numpy_index(indexer, dyn)].set(new)


def _swap_impl(ref, value, *dyn, indexer):
  old = ref._value()
  ref._contents = _write(old, indexer, dyn, value)
  return _read(old, indexer, dyn)


swap_p.def_abstract_eval(_swap_abstract_eval)
swap_p.def_impl(_swap_impl)
effectful_primitives.add(swap_p)

addupdate_p = Primitive("addupdate")
addupdate_p.multiple_results = True


def _addupdate_abstract_eval(ref, value, *dyn, indexer):
  _swap_abstract_eval(ref, value, *dyn, indexer=indexer)
  return []


def _add_at(value, indexer, dyn, delta):
  if _is_full(get_aval(value).shape, indexer):
    return value + delta
  return value.at[numpy_index(indexer, dyn)].add(delta)


def _addupdate_impl(ref, value, *dyn, indexer):
  ref._contents = _add_at(ref._value(), indexer, dyn, value)
  return []


addupdate_p.def_abstract_eval(_addupdate_abstract_eval)
addupdate_p.def_impl(_addupdate_impl)
effectful_primitives.add(addupdate_p)


# --- discharge rules: the pure computation each operation stands for ----------------------
# rule(ref values (None for a non-reference operand), *operands, **params)
#   -> (new values of the reference operands, outputs)

def _new_ref_discharge(refs, x, **params):
  return [], [x]


def _freeze_discharge(refs, ref):
  return [None], [refs[0]]


def _get_discharge(refs, ref, *dyn, indexer):
  return [None] + [None] * len(dyn), [_read(refs[0], indexer, dyn)]


def _swap_discharge(refs, ref, value, *dyn, indexer):
  old = refs[0]
  return ([_write(old, indexer, dyn, value)] + [None] * (1 + len(dyn)),
          [_read(old, indexer, dyn)])


def _addupdate_discharge(refs, ref, value, *dyn, indexer):
  return [_add_at(refs[0], indexer, dyn, value)] + [None] * (1 + len(dyn)), []


state_discharge.register(new_ref_p, _new_ref_discharge, creates=True)
state_discharge.register(freeze_p, _freeze_discharge, invalidates=True)
state_discharge.register(get_p, _get_discharge)
state_discharge.register(swap_p, _swap_discharge)
state_discharge.register(addupdate_p, _addupdate_discharge)


# --- JVP: a differentiated reference is a JVP tracer of two references -------------------

def _new_ref_jvp(primals, tangents, **params):
  (x,), (t,) = primals, tangents
  # The tangent reference exists even for a constant initial value: later writes may store
  # differentiated values in it. Under linearize it is staged (``ad.staged_tangent``).
  return new_ref_p.bind(x, **params), new_ref_p.bind(ad.staged_tangent(t, get_aval(x)),
                                                     **params)


def _freeze_jvp(primals, tangents):
  (ref,), (t,) = primals, tangents
  out = freeze_p.bind(ref)
  return out, (ad.Zero(get_aval(out).to_tangent_aval()) if type(t) is ad.Zero
               else freeze_p.bind(t))


def _get_jvp(primals, tangents, *, indexer):
  ref, *dyn = primals
  out = get_p.bind(ref, *dyn, indexer=indexer)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero(get_aval(out).to_tangent_aval())
  return out, get_p.bind(tangents[0], *dyn, indexer=indexer)


def _swap_jvp(primals, tangents, *, indexer):
  ref, value, *dyn = primals
  ref_t, value_t = tangents[:2]
  out = swap_p.bind(ref, value, *dyn, indexer=indexer)
  if type(ref_t) is ad.Zero:
    if type(value_t) is not ad.Zero:
      raise Exception("performing a set/swap operation with a differentiated value on a "
                      f"non-differentiated array reference of type {get_aval(ref)}. Move the "
                      "array reference to be an argument of the differentiated function?")
    return out, ad.Zero(get_aval(out).to_tangent_aval())
  out_t = swap_p.bind(ref_t, ad.instantiate_zeros(value_t), *dyn, indexer=indexer)
  return out, out_t


def _addupdate_jvp(primals, tangents, *, indexer):
  ref, value, *dyn = primals
  ref_t, value_t = tangents[:2]
  addupdate_p.bind(ref, value, *dyn, indexer=indexer)
  if type(ref_t) is ad.Zero:
    if type(value_t) is not ad.Zero:
      raise Exception("performing an addupdate operation with a differentiated value on a "
                      f"non-differentiated array reference of type {get_aval(ref)}. Move the "
                      "array reference to be an argument of the differentiated function?")
  else:
    addupdate_p.bind(ref_t, ad.instantiate_zeros(value_t), *dyn, indexer=indexer)
  return [], []


ad.primitive_jvps[new_ref_p] = _new_ref_jvp
ad.primitive_jvps[freeze_p] = _freeze_jvp
ad.primitive_jvps[get_p] = _get_jvp
ad.primitive_jvps[swap_p] = _swap_jvp
ad.primitive_jvps[addupdate_p] = _addupdate_jvp
ad.always_differentiated.add(new_ref_p)


# --- batching: a batched reference carries its batch axis like a batched array -------------

def _batched_indexer(indexer, bdim, size):
  return indexer[:bdim] + (_Slice(0, size, 1),) + indexer[bdim:]


def _result_bdim(ref, indexer, bdim, dyn_vals) -> int:
  """Where the batch axis of a batched reference lands in the indexed result."""
  dyn_shapes = tuple(get_aval(d).shape for d in dyn_vals)
  if not any(dyn_shapes):
    return sum(type(e) is _Slice for e in indexer[:bdim])
  # Integer arrays: NumPy's rules may move the axes (advanced indices split by a slice go
  # first), so index a dummy whose batch axis counts 0, 1 and see where that count lands.
  return _advanced_bdim(get_aval(ref).shape, indexer, bdim, dyn_shapes)


@functools.lru_cache(maxsize=256)
def _advanced_bdim(shape, indexer, bdim, dyn_shapes) -> int:
  shape = shape[:bdim] + (2,) + shape[bdim + 1:]
  strides = [0] * len(shape)
  strides[bdim] = np.dtype(np.int64).itemsize
  dummy = np.lib.stride_tricks.as_strided(np.arange(2, dtype=np.int64), shape, strides)
  dyn = [np.zeros(s, np.int32) for s in dyn_shapes]
  idx = numpy_index(indexer, dyn)
  out = dummy[idx[:bdim] + (slice(None),) + idx[bdim:]]
  for k, n in enumerate(out.shape):
    if n == 2 and out[(0,) * k + (1,) + (0,) * (out.ndim - k - 1)] == 1:
      return k
  raise AssertionError("batch axis lost in indexing")


def _check_unbatched_indices(dims, what):
  if any(d is not None for d in dims):
    raise NotImplementedError(f"vmap of a Ref {what} with batched indices is not supported "
                              "yet; index with unbatched integers and slices")


def _new_ref_batch(axis_data, vals, dims, **params):
  x = batching.matchaxis(vals[0], dims[0], dims[0] or 0, axis_data.size)
  return new_ref_p.bind(x, **params), dims[0] or 0


def _freeze_batch(vals, dims):
  return freeze_p.bind(vals[0]), dims[0]


def _get_batch(axis_data, vals, dims, *, indexer):
  ref, *dyn = vals
  _check_unbatched_indices(dims[1:], "read")
  bdim = dims[0]
  out_dim = _result_bdim(ref, indexer, bdim, dyn)
  new = _batched_indexer(indexer, bdim, axis_data.size)
  return get_p.bind(ref, *dyn, indexer=new), out_dim


def _unbatched_ref_error(ref, what="a set/swap"):
  return Exception(f"performing {what} operation with vmapped value on an unbatched array "
                   f"reference of type {get_aval(ref)}. Move the array reference to be an "
                   "argument to the vmapped function?")


def _swap_batch(axis_data, vals, dims, *, indexer):
  ref, value, *dyn = vals
  _check_unbatched_indices(dims[2:], "write")
  if dims[0] is None:
    raise _unbatched_ref_error(ref)
  bdim = dims[0]
  out_dim = _result_bdim(ref, indexer, bdim, dyn)
  value = batching.matchaxis(value, dims[1], out_dim, axis_data.size)
  new = _batched_indexer(indexer, bdim, axis_data.size)
  return swap_p.bind(ref, value, *dyn, indexer=new), out_dim


def _addupdate_batch(axis_data, vals, dims, *, indexer):
  ref, value, *dyn = vals
  _check_unbatched_indices(dims[2:], "write")
  if dims[0] is None:
    raise _unbatched_ref_error(ref, "an addupdate")
  bdim = dims[0]
  out_dim = _result_bdim(ref, indexer, bdim, dyn)
  value = batching.matchaxis(value, dims[1], out_dim, axis_data.size)
  addupdate_p.bind(ref, value, *dyn, indexer=_batched_indexer(indexer, bdim, axis_data.size))
  return [], []


batching.fancy_primitive_batchers[new_ref_p] = _new_ref_batch
batching.always_batched.add(new_ref_p)
batching.primitive_batchers[freeze_p] = _freeze_batch
batching.fancy_primitive_batchers[get_p] = _get_batch
batching.fancy_primitive_batchers[swap_p] = _swap_batch
batching.fancy_primitive_batchers[addupdate_p] = _addupdate_batch
# A write inside vmap happens once per example even when nothing in it is batched, so a
# write to an unbatched reference is an error then too (as in JAX): the rules always run.
batching.always_batched.update((swap_p, addupdate_p))


# --- JAX's printed forms --------------------------------------------------------------------

def _pp_index(ref_var, indexer, dyn_vars, names) -> str:
  shape = ref_var.aval.shape
  if _is_full(shape, indexer):
    return f"{names(ref_var)}[...]"
  parts = []
  for d, e in zip(shape, indexer):
    if type(e) is _Slice:
      start, stop = e.start, e.start + e.size
      parts.append(("" if start == 0 else str(start)) + ":" + ("" if stop == d else str(stop)))
    elif type(e) is Dyn:
      parts.append(names(dyn_vars[e.k]))
    else:
      parts.append(str(e))
  return f"{names(ref_var)}[{','.join(parts)}]"


def _pp_get(eqn, names, binder):
  ref, *dyn = eqn.invars
  return f"{binder(eqn.outvars[0])} <- {_pp_index(ref, eqn.params['indexer'], dyn, names)}"


def _pp_swap(eqn, names, binder):
  ref, value, *dyn = eqn.invars
  where = _pp_index(ref, eqn.params["indexer"], dyn, names)
  if binder.unused(eqn.outvars[0]) and not binder.nested:
    return f"{where} <- {names(value)}"
  out = eqn.outvars[0]
  lhs = f"{names(out)}:{out.aval.str_short()}" if binder.nested else binder(out)
  return f"{lhs}, {where} <- {where}, {names(value)}"


def _pp_addupdate(eqn, names, binder):
  ref, value, *dyn = eqn.invars
  return f"{_pp_index(ref, eqn.params['indexer'], dyn, names)} += {names(value)}"


pp_rules[get_p] = _pp_get
pp_rules[swap_p] = _pp_swap
pp_rules[addupdate_p] = _pp_addupdate


# --- the operations users call ---------------------------------------------------------------

def _ref_aval(ref, what):
  aval = get_aval(ref) if isinstance(ref, (Ref, Tracer)) else None
  if not is_ref_aval(aval):
    raise TypeError(f"{what} requires a Ref, got {type(ref).__name__}")
  return aval


def _value_for(ref_aval, indexer, dyn, value, name="swap"):
  """``value`` as the indexed part of the reference holds it: a weakly typed value or Python
  scalar takes the reference's dtype (as JAX casts it); other dtypes and shapes must match
  (JAX's errors)."""
  want = indexed_aval(ref_aval, indexer, [get_aval(d) for d in dyn])
  aval = get_aval(value)
  if is_ref_aval(aval):
    raise TypeError("cannot store a Ref in a Ref (references to references are not "
                    "supported)")
  if aval.shape != want.shape:
    raise ValueError(f"Invalid shape for `{name}`. Ref shape: {ref_aval.shape}. Expected "
                     f"shape: {want.shape}. Value shape: {aval.shape}.")
  if aval.dtype != want.dtype or aval.weak_type:
    if not aval.weak_type and not _is_python_scalar(value):
      raise ValueError(f"Invalid dtype for `{name}`. Ref dtype: {want.dtype}. Value dtype: "
                       f"{aval.dtype}. ")
    # As JAX: what is stored is strongly typed, whatever the reference was made from.
    value = convert_element_type(value, want.dtype, weak_type=False)
  return value


def _is_view(x) -> bool:
  return getattr(type(x), "_is_ref_view", False)  # ``ref_view.RefView``, made by ``ref.at``


def _is_python_scalar(x) -> bool:
  return type(x) in (int, float, complex, bool)


def new_ref(init_val, *, memory_space=None, kind=None):
  """Make a new mutable array reference holding ``init_val``.

  A ``Ref`` is read with ``ref[idx]`` and written with ``ref[idx] = v``, eagerly or inside
  traced code (``jit``, ``scan``, ``grad``); the effects are discharged into pure operations
  when the program is lowered. A reference to a reference raises TypeError.

  Args:
    init_val: the initial value (an array).
    memory_space: optional memory space of the reference (keyword-only).
    kind: optional kind of the reference (keyword-only).

  Returns:
    A ``Ref`` of ``init_val``'s shape and dtype.

  Examples:
    >>> r = hlox.new_ref(jnp.zeros(2))
    >>> r[0] = 5.
    >>> r[...]
    Array([5., 0.], dtype=float32)
  """
  if isinstance(init_val, Ref) or is_ref_aval(getattr(init_val, "aval", None)):
    raise TypeError("references to references are not supported: new_ref got a Ref")
  return new_ref_p.bind(init_val, kind=kind, memory_space=memory_space)


def freeze(ref):
  """Read the final value of a reference and invalidate it.

  Args:
    ref: a ``Ref`` (anything else raises TypeError).

  Returns:
    The reference's value, as an array.

  Examples:
    >>> def body(x):
    ...   r = hlox.new_ref(x)
    ...   r[...] = r[...] + 1
    ...   return hlox.freeze(r)
    >>> hlox.jit(body)(jnp.zeros(2))
    Array([1., 1.], dtype=float32)
  """
  _ref_aval(ref, "freeze")
  return freeze_p.bind(ref)


def get(ref, idx=None):
  """``ref[idx]``: the indexed part of the reference's current value."""
  if _is_view(ref):
    return ref.get(() if idx is None else idx)
  aval = _ref_aval(ref, "get")
  indexer, dyn = normalize_index(aval.shape, idx)
  return get_p.bind(ref, *dyn, indexer=indexer)


def swap(ref, idx, value, _function_name="ref_swap"):
  """Store ``value`` at ``ref[idx]`` and return what was there."""
  if _is_view(ref):
    return ref.swap(value, idx)
  aval = _ref_aval(ref, "swap")
  indexer, dyn = normalize_index(aval.shape, idx)
  value = _value_for(aval, indexer, dyn, value)
  return swap_p.bind(ref, value, *dyn, indexer=indexer)


def set(ref, idx, value):  # noqa: A001 (JAX's name)
  """``ref[idx] = value``."""
  swap(ref, idx, value, _function_name="ref_set")


def addupdate(ref, idx, x):
  """``ref[idx] += x``, as one operation (its transpose is a read)."""
  if _is_view(ref):
    return ref.addupdate(x, idx)
  aval = _ref_aval(ref, "addupdate")
  indexer, dyn = normalize_index(aval.shape, idx)
  x = _value_for(aval, indexer, dyn, x, "addupdate")
  addupdate_p.bind(ref, x, *dyn, indexer=indexer)


def empty_ref(ty, memory_space=None):
  """Make a new, zero-filled reference of a given type.

  Args:
    ty: anything with ``shape`` and ``dtype`` (a ``ShapeDtypeStruct``, an array).
    memory_space: optional memory space of the reference.

  Returns:
    A ``Ref`` of ``ty``'s shape and dtype, holding zeros.

  Examples:
    >>> r = hlox.empty_ref(hlox.ShapeDtypeStruct((2,), jnp.float32))
    >>> r[...]
    Array([0., 0.], dtype=float32)
  """
  from hlox.lax.base import full
  return new_ref(full(ty.shape, 0, ty.dtype), memory_space=memory_space)


def free_ref(ref):
  """Invalidate a reference without reading it.

  Args:
    ref: a ``Ref``.

  Returns:
    None.

  Examples:
    >>> r = hlox.new_ref(jnp.zeros(2))
    >>> hlox.free_ref(r)
  """
  freeze(ref)


set_ref_ops(get=get, set=set, swap=lambda r, i, v: swap(r, i, v), addupdate=addupdate,
            freeze=freeze)


def ref_getitem(ref, idx):
  return get(ref, idx)


def ref_setitem(ref, idx, value):
  set(ref, idx, value)


"""``sparsify``: run a function written for dense arrays on sparse ones
(``jax.experimental.sparse.sparsify``).

Two implementations, as in JAX. By default the function is traced to a jaxpr on dense
stand-ins of its arguments, and the jaxpr is evaluated with sparse values where they flow
(``_sparsify_core.eval_sparse``). With ``use_tracer=True`` the function runs on
``SparseTracer``s instead: every primitive it binds reaches ``SparseTrace``, which applies
the same sparse rules (``_sparse_rules``) to the tracers' values. Either way a primitive with
a sparse operand and no sparse rule raises NotImplementedError (use ``sparse.todense`` to
densify on purpose).

The arithmetic methods of ``BCOO`` (``x ** 2``, ``x.reshape``, ``x.sum``...) are defined here
through ``sparsify``, so that they are exactly the sparse rules of the matching primitives.
"""
import functools

from hlox import numpy as jnp
from hlox._tree_transform import tree_flatten, tree_unflatten
from hlox.core.tracer import Trace, Tracer, current_trace, set_current_trace
from hlox.experimental.sparse._sparsify_core import (
    SparsifyEnv, SparsifyValue, apply_rule, arrays_to_spvalues, eval_sparse, is_sparse_obj,
    sparsify_raw, spvalues_to_arrays, spvalues_to_avals)
# The tables, filled in by the module that defines the rules.
from hlox.experimental.sparse._sparse_rules import sparse_rules_bcoo, sparse_rules_bcsr
from hlox.experimental.sparse.bcoo import BCOO

__all__ = ["SparseTrace", "SparseTracer", "SparsifyEnv", "SparsifyValue", "arrays_to_spvalues",
           "eval_sparse", "sparse_rules_bcoo", "sparse_rules_bcsr", "sparsify", "sparsify_raw",
           "spvalues_to_arrays", "spvalues_to_avals"]


def sparsify(f, use_tracer: bool = False):
  """``f`` accepting sparse (BCOO, BCSR) arrays wherever it took dense ones; outputs of
  sparsity-preserving computations stay sparse. ``use_tracer`` selects the tracer-based
  implementation instead of the jaxpr interpreter."""
  return _sparsify_with_tracer(f) if use_tracer else _sparsify_with_interpreter(f)


def _sparsify_with_interpreter(f):
  f_raw = sparsify_raw(f)

  @functools.wraps(f)
  def wrapped(*args, **params):
    spenv = SparsifyEnv()
    spvalues = arrays_to_spvalues(spenv, args)
    out, out_tree = f_raw(spenv, *spvalues, **params)
    return tree_unflatten(out_tree, spvalues_to_arrays(spenv, out))
  return wrapped


# --- the tracer implementation ------------------------------------------------------------

class SparseTracer(Tracer):
  """A value inside ``sparsify(f, use_tracer=True)``: a ``SparsifyValue`` of its trace's
  environment, dense or sparse."""

  __slots__ = ("_spvalue", "_aval")

  def __init__(self, trace, *, spvalue: SparsifyValue):
    self._trace = trace
    self._spvalue = spvalue
    self._aval = spvalues_to_avals(trace.spenv, spvalue)

  @property
  def spenv(self) -> SparsifyEnv:
    return self._trace.spenv

  @property
  def aval(self):
    return self._aval


class SparseTrace(Trace):
  """Applies sparse rules to the primitives bound on ``SparseTracer``s; dense-only
  operations go to the parent trace unchanged."""

  name = "sparsify"

  def __init__(self, parent, spenv: SparsifyEnv):
    super().__init__()
    self.parent = parent
    self.spenv = spenv

  def to_sparse_tracer(self, x) -> SparseTracer:
    if isinstance(x, SparseTracer) and x._trace is self:
      return x
    if isinstance(x, Tracer):
      self.check_tracer(x)
    with set_current_trace(self.parent):
      spvalue, = arrays_to_spvalues(self.spenv, [x])
    return SparseTracer(self, spvalue=spvalue)

  def process_primitive(self, primitive, args, params):
    spvalues = [self.to_sparse_tracer(x)._spvalue for x in args]
    with set_current_trace(self.parent):
      if any(v.is_sparse() for v in spvalues):
        outs = apply_rule(primitive, self.spenv, spvalues, params)
      else:
        out = primitive.bind(*(self.spenv.data(v) for v in spvalues), **params)
        outs = arrays_to_spvalues(self.spenv, list(out) if primitive.multiple_results
                                  else [out])
    tracers = [SparseTracer(self, spvalue=v) for v in outs]
    return tracers if primitive.multiple_results else tracers[0]


def _sparsify_with_tracer(f):

  @functools.wraps(f)
  def wrapped(*args, **params):
    leaves, in_tree = tree_flatten(args, is_leaf=is_sparse_obj)
    spenv = SparsifyEnv()
    trace = SparseTrace(current_trace(), spenv)
    trace.debug_info = getattr(f, "__name__", "fun")
    spvalues = arrays_to_spvalues(spenv, leaves)
    try:
      in_tracers = [SparseTracer(trace, spvalue=v) for v in spvalues]
      with set_current_trace(trace):
        outs = f(*tree_unflatten(in_tree, in_tracers), **params)
        out_leaves, out_tree = tree_flatten(outs)
        out_values = [trace.to_sparse_tracer(o)._spvalue for o in out_leaves]
    finally:
      trace.invalidate()
    return tree_unflatten(out_tree, spvalues_to_arrays(spenv, out_values))
  return wrapped


# --- BCOO methods derived from sparsify ---------------------------------------------------
# The operators whose meaning is the dense one under sparsify. Products and layout methods
# (``*``, ``@``, ``reshape``, indexing) are installed by the modules that implement them.

def _method(fn, doc):
  fn.__doc__ = doc
  return fn


def _swap(f):
  return lambda a, b: f(b, a)


def _sparse_iter(arr):
  return iter(arr[i] for i in range(arr.shape[0]))


_BCOO_METHODS = {
    "astype": _method(lambda self, *a, **k: sparsify(lambda x: x.astype(*a, **k))(self),
                      "A copy with ``data`` converted to the given dtype."),
    "sum": _method(lambda self, *a, **k: sparsify(lambda x: x.sum(*a, **k))(self),
                   "The sum over ``axis`` (all axes by default); a full sum is dense."),
    "__abs__": sparsify(jnp.abs),
    "__neg__": sparsify(jnp.negative),
    "__pos__": sparsify(jnp.positive),
    "__truediv__": sparsify(jnp.divide),
    "__rtruediv__": sparsify(_swap(jnp.divide)),
    "__add__": sparsify(jnp.add),
    "__radd__": sparsify(_swap(jnp.add)),
    "__sub__": sparsify(jnp.subtract),
    "__rsub__": sparsify(_swap(jnp.subtract)),
    "__pow__": lambda self, y: sparsify(lambda x: jnp.power(x, y))(self),
    "__rpow__": sparsify(_swap(jnp.power)),
    "__iter__": _sparse_iter,
    "__gt__": sparsify(jnp.greater),
    "__ge__": sparsify(jnp.greater_equal),
    "__lt__": sparsify(jnp.less),
    "__le__": sparsify(jnp.less_equal),
    "__eq__": sparsify(jnp.equal),
    "__ne__": sparsify(jnp.not_equal),
}

for _name, _impl in _BCOO_METHODS.items():
  setattr(BCOO, _name, _impl)

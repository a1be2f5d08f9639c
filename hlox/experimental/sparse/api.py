"""Format-generic constructors and conversions of ``hlox.experimental.sparse``
(``sparse.empty``, ``sparse.eye``, ``sparse.todense``, and ``todense_p``, the primitive that
densifies the flattened buffers of any sparse array)."""
from hlox import numpy as jnp
from hlox.api import eval_shape, vmap
from hlox.autodiff import vjp
from hlox.core import Primitive, ShapedArray
from hlox.core.tracer import Tracer
from hlox.interpreters import ad, batching, xla
from hlox._tree_transform import tree_structure, tree_unflatten
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.bcoo import BCOO
from hlox.experimental.sparse.bcsr import BCSR
from hlox.experimental.sparse.coo import COO
from hlox.experimental.sparse.csr import CSC, CSR

__all__ = ["empty", "eye", "todense", "todense_p"]

_FORMATS = {"bcoo": BCOO, "bcsr": BCSR, "coo": COO, "csc": CSC, "csr": CSR}


def _format(sparse_format: str):
  try:
    return _FORMATS[sparse_format]
  except KeyError:
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; expected one of "
                     f"{sorted(_FORMATS)}") from None


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """An all-zero sparse array of ``shape`` (``nse=0`` unless ``nse=`` is given)."""
  return _format(sparse_format)._empty(shape, dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """A sparse ``(N, M)`` array with ones on the ``k``-th diagonal, as ``jnp.eye``."""
  return _format(sparse_format)._eye(N, N if M is None else M, k, dtype=dtype,
                                     index_dtype=index_dtype, **kwds)


def todense(arr):
  """``arr`` as a dense array (dense arrays come back unchanged)."""
  if isinstance(arr, JAXSparse):
    return arr.todense()
  if isinstance(arr, Tracer):
    # Traced, the value may stand for a sparse array (inside ``sparsify``): the primitive
    # marks the conversion in the jaxpr so that sparsify can densify there.
    return todense_p.bind(arr, tree=tree_structure(arr))
  return arr


# --- todense_p ------------------------------------------------------------------------------
#
# ``todense_p.bind(*buffers, tree=treedef)`` is ``todense`` of the sparse array the buffers
# and tree describe (a dense array's tree is a leaf: the array itself). It is linear in the
# first buffer (``data``); derivatives with respect to the others (indices) are zero.

def _todense_flat(*bufs, tree):
  arr = tree_unflatten(tree, bufs)
  return arr.todense() if isinstance(arr, JAXSparse) else arr


todense_p = Primitive("todense")
todense_p.def_impl(_todense_flat)


@todense_p.def_abstract_eval
def _todense_abstract_eval(*avals, tree):
  out = eval_shape(lambda *b: _todense_flat(*b, tree=tree), *avals)
  return ShapedArray(out.shape, out.dtype)


xla.register_lowering(todense_p, xla.lower_fun(_todense_flat, multiple_results=False))


def _todense_jvp(primals, tangents, *, tree):
  out = todense_p.bind(*primals, tree=tree)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, todense_p.bind(ad.instantiate_zeros(tangents[0]), *primals[1:], tree=tree)


def _todense_transpose(ct, *bufs, tree):
  if any(ad.is_undefined_primal(b) for b in bufs[1:]):
    raise ValueError("Cannot transpose with respect to sparse indices")
  data = bufs[0]
  if type(ct) is ad.Zero:
    return [ad.Zero(data.aval), *(None for _ in bufs[1:])]
  # The transpose of a linear map is its VJP (at any point: zeros).
  zeros = jnp.zeros(data.aval.shape, data.aval.dtype)
  _, pullback = vjp(lambda d: _todense_flat(d, *bufs[1:], tree=tree), zeros)
  return [pullback(ct)[0], *(None for _ in bufs[1:])]


def _todense_batch(vals, dims, *, tree):
  size = next(v.shape[d] for v, d in zip(vals, dims) if d is not None)
  out = vmap(lambda *b: _todense_flat(*b, tree=tree), in_axes=tuple(dims),
             axis_size=size)(*vals)
  return out, 0


ad.primitive_jvps[todense_p] = _todense_jvp
ad.primitive_transposes[todense_p] = _todense_transpose
batching.primitive_batchers[todense_p] = _todense_batch

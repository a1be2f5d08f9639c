"""Format-generic constructors and conversions of ``hlox.experimental.sparse``
(``sparse.empty``, ``sparse.eye``, ``sparse.todense``)."""
from hlox.core.tracer import Tracer
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.bcoo import BCOO
from hlox.interpreters import ad, xla
from hlox.lax.utils import defvectorized, standard_primitive
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
    return todense_p.bind(arr)
  return arr


# On a dense operand ``todense`` is the identity; ``sparsify`` gives it its sparse meaning.
todense_p = standard_primitive(lambda x: x.shape, lambda x: x.dtype, "todense",
                               weak_type_rule=lambda x: x.weak_type)
xla.register_lowering(todense_p, lambda ctx, x: x)
ad.deflinear(todense_p, lambda ct, x: [ct])
defvectorized(todense_p)

"""The base class of hlox's sparse array types (``jax.experimental.sparse.JAXSparse``): the
array-like attributes every format shares, and pytree registration of subclasses."""
import abc
import math

from hlox.core.tracer import Tracer


class JAXSparse(abc.ABC):
  """A sparse array: a pytree of dense buffers plus a static shape. Subclasses say how the
  buffers encode the array (``todense``, ``transpose``, ``tree_flatten``...)."""
  data: object
  shape: tuple

  __hash__ = None

  def __init__(self, args, *, shape):
    self.shape = tuple(int(s) for s in shape)

  @property
  @abc.abstractmethod
  def dtype(self): ...

  @property
  @abc.abstractmethod
  def nse(self) -> int: ...

  @abc.abstractmethod
  def tree_flatten(self): ...

  @classmethod
  @abc.abstractmethod
  def tree_unflatten(cls, aux_data, children): ...

  @abc.abstractmethod
  def transpose(self, axes=None): ...

  @abc.abstractmethod
  def todense(self): ...

  def __len__(self):
    return self.shape[0]

  @property
  def size(self) -> int:
    return math.prod(self.shape)

  @property
  def ndim(self) -> int:
    return len(self.shape)

  @property
  def T(self):
    return self.transpose()

  def _repr_extra(self) -> str:
    return f", nse={self.nse}"

  def __repr__(self):
    name = type(self).__name__
    try:
      text = f"{name}({self.dtype}{list(self.shape)}{self._repr_extra()})"
    except Exception:  # a half-built object still prints
      text = f"{name}(<invalid>)"
    if isinstance(self.data, Tracer):
      text = f"{type(self.data).__name__}[{text}]"
    return text

  def block_until_ready(self):
    for buf in self.tree_flatten()[0]:
      buf.block_until_ready()
    return self

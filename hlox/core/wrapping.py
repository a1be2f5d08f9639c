"""Giving a transformation's wrapper function the name and docs of the function it wraps."""
import functools
import inspect


def wraps(wrapped, updated=("__dict__",)):
  """As ``functools.wraps``, but copying only what can be copied: a callable object (a
  neural-network module, say) may carry a ``__name__`` or ``__doc__`` that is no string,
  or attributes that raise when read, which a function refuses or ``functools`` stops at.
  Transformations must still accept such a callable (JAX's do), so the wrapper keeps its
  own value for each attribute it cannot take."""
  def decorate(wrapper):
    for attr in functools.WRAPPER_ASSIGNMENTS:
      try:
        setattr(wrapper, attr, getattr(wrapped, attr))
      except Exception:  # missing, unreadable, or of a type the wrapper cannot hold
        pass
    for attr in updated:
      try:
        getattr(wrapper, attr).update(getattr(wrapped, attr, {}))
      except Exception:
        pass
    wrapper.__wrapped__ = wrapped
    return wrapper
  return decorate


class LazySignature(inspect.Signature):
  """The signature of ``fun``, worked out when first read: what a wrapper that takes
  ``fun``'s arguments reports as its own ``__signature__`` (JAX's jitted functions do, and
  chex's fake ``pmap`` asks for it without following ``__wrapped__``). Making wrappers must
  stay cheap, and most signatures are never read."""
  __slots__ = ("_fun", "_resolved")

  def __init__(self, fun):  # (no parameters of its own: they are ``fun``'s)
    self._fun = fun
    self._resolved = None

  def _signature(self) -> inspect.Signature:
    if self._resolved is None:
      self._resolved = inspect.signature(self._fun)
    return self._resolved

  @property
  def parameters(self):
    return self._signature().parameters

  @property
  def return_annotation(self):
    return self._signature().return_annotation

  def replace(self, **changes):
    return self._signature().replace(**changes)

  def __reduce__(self):  # pickled (cloudpickle keeps a function's attributes) as resolved
    return self._signature().__reduce__()

  def __repr__(self):
    return repr(self._signature())

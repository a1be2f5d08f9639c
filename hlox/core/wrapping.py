"""Giving a transformation's wrapper function the name and docs of the function it wraps."""
import functools


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

"""``jax._src.interpreters.ad``: diffrax's tests expect ``CustomVJPException`` when a
``custom_vjp`` function (its backsolve adjoint) is differentiated through a closed-over
value."""
from hlox.interpreters.ad import CustomVJPException

__all__ = ["CustomVJPException"]

"""``hlox.scipy``: SciPy functions written on ``hlox.numpy`` and ``hlox.lax``."""
from hlox.scipy import special  # noqa: F401
from hlox.scipy import integrate, stats  # noqa: F401

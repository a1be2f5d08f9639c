"""hlox's version (JAX's ``jax.version`` module: ``__version__``, ``_version`` and
``__version_info__``); the package re-exports ``hlox.__version__`` from here."""

_version = "0.1.0"
__version__ = _version
__version_info__ = tuple(int(part) for part in _version.split("."))

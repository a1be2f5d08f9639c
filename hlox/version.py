"""hlox's version (JAX's ``jax.version`` module: ``__version__``, ``_version`` and
``__version_info__``); the package re-exports ``hlox.__version__`` from here.

``__version__`` is the version of JAX whose API hlox implements: programs and libraries
written for JAX gate features on ``jax.__version_info__`` (flax picks its tracing and scan
code paths by it, optax and equinox theirs), and with ``jax`` aliased to hlox they must see
the API they are actually talking to. The distribution's own version is ``hlox_version``.
"""

_version = "0.10.2"
__version__ = _version
__version_info__ = tuple(int(part) for part in _version.split("."))

hlox_version = "0.1.0"  # the hlox package's release (pyproject.toml)

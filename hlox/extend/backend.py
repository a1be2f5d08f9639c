"""``jax.extend.backend``: the PJRT clients hlox runs on."""
from hlox.runtime import client as _client

__all__ = ["backends", "get_backend", "get_default_device"]


def get_backend(platform=None):
  """The PJRT client of ``platform`` (default: the default platform); a RuntimeError names
  the available platforms when there is no such one. A client passed in is returned."""
  if platform is not None and not isinstance(platform, str):
    return platform  # already a client, as JAX accepts
  return _client.get_client(platform)


def backends() -> dict:
  """The initialised clients by platform name."""
  return _client.clients()


def get_default_device():
  """The device computations without a placement run on."""
  return _client.default_device()

"""What the runtime can say about itself: the live arrays, the device class, the versions and
devices of this process (``hlox.live_arrays``, ``hlox.Device``, ``hlox.print_environment_info``).
"""
from __future__ import annotations

import gc
import platform
import sys

import numpy as np

from hlox import version
from hlox.runtime import client
from hlox.runtime import array as array_lib


def live_arrays(platform_name: str | None = None) -> list:
  """Every hlox Array of this process whose buffers are still alive (not deleted).

  Found by walking the garbage collector's objects, so the call costs time in proportion to
  the live objects, and creating arrays costs nothing extra. The scalar buffers hlox shares
  between calls internally (never handed to user code) are left out. Useful to find what
  holds device memory.

  Args:
    platform_name: optional platform (``"cpu"``, ...): keep only Arrays on it; an unknown
      name raises RuntimeError.

  Returns:
    A list of Arrays.

  Examples:
    >>> x = jnp.arange(3)
    >>> any(a is x for a in hlox.live_arrays())
    True
  """
  if platform_name is not None:
    client._check_backend(platform_name)
  internal = {id(a) for a in array_lib._scalar_buffers.values()}
  found = []
  for obj in gc.get_objects():
    if type(obj) is array_lib.Array and id(obj) not in internal:
      try:
        if obj.is_deleted():
          continue
        if platform_name is not None and not any(
            d.platform == platform_name for d in obj.devices()):
          continue
      except Exception:  # a half-built or already-torn-down array
        continue
      found.append(obj)
  return found


def device_class() -> type:
  """The class of hlox's devices (jaxlib's ``Device``), for ``isinstance`` checks."""
  return client._xc().Device


def jaxlib_version() -> str:
  """The version of the jaxlib that hlox runs on (``jax.lib.__version__``)."""
  import jaxlib.version
  return jaxlib.version.__version__


def print_environment_info(return_string: bool = False):
  """Print the versions and devices that a bug report should include.

  Lists hlox's, jaxlib's, NumPy's and Python's versions, the devices, the process count and
  the platform.

  Args:
    return_string: if True, return the text instead of printing it.

  Returns:
    The text when ``return_string`` is True, else None.

  Examples:
    >>> print(hlox.print_environment_info(return_string=True))  # doctest: +ELLIPSIS
    hlox: ...
    jaxlib: ...
  """
  devices = client.devices()
  lines = [
      f"hlox:    {version.hlox_version} (JAX {version.__version__} API)",
      f"jaxlib:  {jaxlib_version()}",
      f"numpy:   {np.__version__}",
      f"python:  {sys.version.replace(chr(10), ' ')}",
      f"device info: {client.default_backend()}-{len(devices)}, "
      f"{client.local_device_count()} local devices",
      f"process_count: {client.process_count()}",
      f"platform: {platform.uname()}",
  ]
  text = "\n".join(lines) + "\n"
  if return_string:
    return text
  print(text, end="")
  return None

"""Transfer guards (JAX's ``jax.transfer_guard``): what a transfer between host and device, or
between devices, does under the ``transfer_guard_*`` options.

Levels, per direction: 'allow' (or None, the default), 'log' (a warning per implicit
transfer), 'disallow' (implicit transfers raise), 'log_explicit' and 'disallow_explicit' (the
same for explicit ones too). Explicit transfers are the ones asked for by name
(``device_put``, ``device_get``); every other one (a NumPy array or Python scalar passed to
a jitted function or an operation, an array printed) is implicit.

The transfer points call ``check`` only when the option is set (one dict read otherwise),
so the dispatch paths cost nothing extra when no guard is on.
"""
from __future__ import annotations

import contextlib
import logging
import threading

from hlox.config import config

_logger = logging.getLogger("hlox.transfer_guard")
_state = threading.local()

_OPTIONS = {"host-to-device": "transfer_guard_host_to_device",
            "device-to-device": "transfer_guard_device_to_device",
            "device-to-host": "transfer_guard_device_to_host"}


@contextlib.contextmanager
def explicit():
  """Marks the transfers made inside the block as explicit (``device_put``/``device_get``)."""
  depth = getattr(_state, "explicit", 0)
  _state.explicit = depth + 1
  try:
    yield
  finally:
    _state.explicit = depth


def _runtime_error():
  from jaxlib import _jax  # JAX raises jaxlib's runtime error class for guarded transfers
  return _jax.JaxRuntimeError


def check(direction: str, aval, destination) -> None:
  """Apply the guard level of ``direction`` ('host-to-device', ...) to one transfer of a
  value of ``aval`` to ``destination`` (a sharding or device, for the message)."""
  level = config._values[_OPTIONS[direction]]
  if level is None or level == "allow":
    return
  is_explicit = getattr(_state, "explicit", 0) > 0
  what = f"{direction} transfer: aval={aval!r}, dst_sharding={destination!r}"
  if level == "disallow_explicit" or (level == "disallow" and not is_explicit):
    kind = "explicit" if is_explicit else "implicit"
    raise _runtime_error()(
        f"INVALID_ARGUMENT: Disallowed {what} (an {kind} transfer, with the config option "
        f"jax_{_OPTIONS[direction]}={level!r}; use hlox.device_put/device_get for "
        "explicit transfers, or allow them)")
  if level == "log_explicit" or (level == "log" and not is_explicit):
    _logger.warning(what)

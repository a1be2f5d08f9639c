"""JAX's warning for programs that capture many bytes of constants (``jit`` of a function
closing over big arrays): they become arguments of every call, and often the user meant to
pass them. ``config.captured_constants_warn_bytes`` is the threshold (-1: never warn);
``captured_constants_report_frames`` (nonzero) adds where the largest ones are used."""
from __future__ import annotations

import heapq
import math
import warnings

from hlox.config import config


def pprint_bytes(num_bytes) -> str:
  """``num_bytes`` with a decimal prefix and two decimals (``65.54KB``), as JAX prints."""
  if num_bytes <= 0:
    return "0.00B"
  prefixes = ("", "K", "M", "G", "T")
  exponent = min(math.floor(math.log(num_bytes, 1000)), len(prefixes) - 1)
  return f"{num_bytes / 1000 ** exponent:.2f}{prefixes[exponent]}B"


def warn_if_large(jaxpr, consts) -> None:
  """Warn (UserWarning) when ``consts``, the values bound to the first invars of ``jaxpr``,
  hold at least the configured number of bytes. Called once per lowering."""
  threshold = config.captured_constants_warn_bytes
  if threshold == -1:
    return
  sizes = [getattr(c, "nbytes", 0) for c in consts]
  total = sum(sizes)
  if total < threshold:
    return
  message = (f"A large amount of constants were captured during lowering ({pprint_bytes(total)} "
             "total). If this is intentional, disable this warning by setting "
             "HLOX_CAPTURED_CONSTANTS_WARN_BYTES=-1 (JAX's spelling works too). ")
  frames = config.captured_constants_report_frames
  if not frames:
    warnings.warn(message + "To obtain a report of where these constants were encountered, set "
                  "HLOX_CAPTURED_CONSTANTS_REPORT_FRAMES=-1.", stacklevel=2)
    return
  message += ("The subsequent report may be disabled by setting "
              "HLOX_CAPTURED_CONSTANTS_REPORT_FRAMES=0.\n\n"
              f"Largest {min(5, len(consts))} allocation(s):\n")
  largest = heapq.nlargest(5, zip(sizes, range(len(consts))), key=lambda p: p[0])
  for nbytes, i in largest:
    var = jaxpr.invars[i]
    message += (f"  Constant {type(consts[i])}, {var.aval.str_short()}, "
                f"{pprint_bytes(nbytes)} captured at:\n")
    for eqn in jaxpr.eqns:
      if any(v is var for v in eqn.invars):
        message += f"    {eqn.source_info}\n\n"
  warnings.warn(message, stacklevel=2)

"""``visualize_array_sharding``: a text table of which devices hold which block of an array
(JAX draws the same table with ``rich``; this one needs nothing)."""
from __future__ import annotations

import builtins


def _bounds(index, n):
  start, stop, _ = index.indices(n)
  return start, stop


def sharding_table(shape, sharding) -> str:
  """The table for an array of ``shape`` (1 or 2 dimensions) laid out by ``sharding``."""
  if len(shape) not in (1, 2):
    raise ValueError(f"visualize_array_sharding can only visualize 1- or 2-dimensional "
                     f"arrays, got shape {tuple(shape)}")
  shape2 = (1, shape[0]) if len(shape) == 1 else tuple(shape)
  blocks = {}
  for device, index in sharding.devices_indices_map(tuple(shape)).items():
    index = (slice(None),) + tuple(index) if len(shape) == 1 else tuple(index)
    key = (_bounds(index[0], shape2[0]), _bounds(index[1], shape2[1]))
    blocks.setdefault(key, []).append(device)
  rows = sorted({k[0] for k in blocks})
  cols = sorted({k[1] for k in blocks})
  platform = next(iter(sharding.device_set)).platform.upper()
  cells = [[" ".join([platform] + [",".join(str(d.id) for d in sorted(
      blocks.get((r, c), []), key=lambda d: d.id))]) for c in cols] for r in rows]
  width = max(len(cell) for row in cells for cell in row) + 2
  line = lambda left, mid, right: left + mid.join("─" * width for _ in cols) + right
  out = [line("┌", "┬", "┐")]
  for i, row in enumerate(cells):
    out.append("│" + "│".join(cell.center(width) for cell in row) + "│")
    out.append(line("├", "┼", "┤") if i < len(cells) - 1 else line("└", "┴", "┘"))
  return "\n".join(out)


def visualize_array_sharding(arr, *, use_color: bool = False, scale: float = 1.0,
                             min_width: int = 9, max_width: int = 80):
  """Print which devices hold which block of the 1- or 2-dimensional array ``arr``."""
  builtins.print(sharding_table(arr.shape, arr.sharding))


def visualize_sharding(shape, sharding, *, use_color: bool = False, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, color_map=None):
  """Print the table of ``visualize_array_sharding`` for an array of ``shape`` laid out by
  ``sharding``."""
  builtins.print(sharding_table(tuple(shape), sharding))

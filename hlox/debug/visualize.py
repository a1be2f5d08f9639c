"""``visualize_array_sharding``: a text table of which devices hold which block of an array
(JAX draws the same table with ``rich``; this one needs nothing)."""
from __future__ import annotations

import builtins


def _chunk(index, n):
  """(chunk number, fraction of ``n``) of a block's slice along one dimension."""
  start, stop, _ = index.indices(n)
  size = stop - start
  return (start // size if size else 0), size / n


def sharding_table(shape, sharding, *, scale: float = 1.0, min_width: int = 9,
                   max_width: int = 80) -> str:
  """The table for an array of ``shape`` (1 or 2 dimensions) laid out by ``sharding``: JAX's
  layout (``rich``'s square box), each block's box sized in proportion to its part of the
  array (about 2.5 characters across per line down), at least ``min_width`` wide. (Unlike
  ``rich``, a table wider than ``max_width`` is not shrunk to fit.)"""
  if len(shape) not in (1, 2):
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  platform = next(iter(sharding.device_set)).platform.upper()
  ids, sizes = {}, {}
  for device, index in sharding.devices_indices_map(tuple(shape)).items():
    parts = [_chunk(i, n) for i, n in zip(index, shape)]
    if len(shape) == 1:  # one row, one line high
      parts = [(0, None)] + parts
    key = tuple(c for c, _ in parts)
    ids.setdefault(key, set()).add(device.id)
    sizes[key] = tuple(f for _, f in parts)
  rows = max(k[0] for k in ids) + 1
  cols = max(k[1] for k in ids) + 1
  cells = {}  # (row, col) -> (text, top, right, bottom, left)
  for key, devs in ids.items():
    text = f"{platform} " + ",".join(str(i) for i in sorted(devs))
    height, width = sizes[key]
    width = min(max(int(width * base_width * 2.5), min_width), max_width)
    height = 1 if height is None else int(height * base_height)
    left, extra = divmod(width - len(text) - 2, 2)
    top, extra_v = divmod(height - 2, 2)
    cells[key] = (text, max(top, 0), max(left + extra, 0), max(top + extra_v, 0),
                  max(left, 0))
  col_w = [max(c[4] + len(c[0]) + c[2] for k, c in cells.items() if k[1] == j)
           for j in range(cols)]
  rule = lambda l, m, r: l + m.join("─" * w for w in col_w) + r
  out = [rule("┌", "┬", "┐")]
  for i in range(rows):
    row = [cells[i, j] for j in range(cols)]
    lines = max(c[1] + 1 + c[3] for c in row)
    for line in range(lines):
      pieces = []
      for (text, top, right, bottom, left), w in zip(row, col_w):
        inner = w - left - right
        if line == top:
          pad = inner - len(text)
          pieces.append(" " * (left + pad // 2) + text + " " * (pad - pad // 2 + right))
        else:
          pieces.append(" " * w)
      out.append("│" + "│".join(pieces) + "│")
    out.append(rule("├", "┼", "┤") if i < rows - 1 else rule("└", "┴", "┘"))
  return "\n".join(out)


def visualize_array_sharding(arr, *, use_color: bool = True, scale: float = 1.0,
                             min_width: int = 9, max_width: int = 80):
  """Print which devices hold which block of the 1- or 2-dimensional array ``arr``."""
  builtins.print(sharding_table(arr.shape, arr.sharding, scale=scale, min_width=min_width,
                                max_width=max_width))


def visualize_sharding(shape, sharding, *, use_color: bool = True, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, color_map=None):
  """Print the table of ``visualize_array_sharding`` for an array of ``shape`` laid out by
  ``sharding``."""
  builtins.print(sharding_table(tuple(shape), sharding, scale=scale, min_width=min_width,
                                max_width=max_width))

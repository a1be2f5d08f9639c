"""Shape manipulation: reshape, transpose, swapaxes, moveaxis, expand_dims, squeeze, broadcast_to, concatenate, stack, split, tile, repeat, ..."""
from __future__ import annotations

__all__ = []

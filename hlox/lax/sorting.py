"""sort (several operands, num_keys, stability) and top_k."""
from __future__ import annotations

__all__ = []

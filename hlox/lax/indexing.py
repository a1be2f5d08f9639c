"""Indexing primitives: dynamic_slice, dynamic_update_slice, gather, scatter (+add/mul/min/max)."""
from __future__ import annotations

__all__ = []

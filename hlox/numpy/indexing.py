"""NumPy indexing on lax: __getitem__, .at[] updates, take, take_along_axis."""
from __future__ import annotations

__all__ = []

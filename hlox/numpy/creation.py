"""Array creation: array, asarray, zeros, ones, full, empty, *_like, arange, linspace, eye, identity."""
from __future__ import annotations

__all__ = []

"""Cumulative reductions: cumsum, cumprod, cummax, cummin, cumlogsumexp."""
from __future__ import annotations

__all__ = []

"""Reductions: sum, prod, mean, var, std, max, min, argmax, argmin, all, any, cumsum, cumprod."""
from __future__ import annotations

__all__ = []

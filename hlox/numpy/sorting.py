"""Sorting: sort, argsort."""
from __future__ import annotations

__all__ = []

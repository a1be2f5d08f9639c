"""Products: dot, matmul, vdot, outer, inner, tensordot."""
from __future__ import annotations

__all__ = []

"""dot_general: contractions with batch dimensions, precision and preferred_element_type."""
from __future__ import annotations

__all__ = []

"""``jax.ref``: mutable array references (``Ref``) and the operations on them.

A reference is made by ``new_ref`` and read and written by indexing (``ref[idx]``,
``ref[idx] = value``) or by the functions here; see ``lax/state.py`` for the primitives and
``interpreters/state_discharge.py`` for how programs that use references are made pure.
"""
from hlox.core.refs import AbstractRef, Ref
from hlox.lax.state import (addupdate, empty_ref, free_ref, freeze, get, new_ref, set,
                            swap)

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]

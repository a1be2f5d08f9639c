"""The interpreters: generic machines that apply per-primitive rules to traces and jaxprs.

Belongs here: autodiff (``ad``), partial evaluation, batching, lowering to StableHLO and
eager dispatch (``xla``), the pmap replica machinery, ``checkify`` (errors threaded as
values) and ``jet`` (Taylor series), each with its rule tables; no primitive-specific code (primitives register their rules from ``hlox.lax``). May import
``hlox.core``, ``hlox.runtime``, the utilities (``cache``, ``monitoring``, ``tree_util``),
``config``/``errors`` and jaxlib's MLIR builders; never ``lax``, ``numpy``, ``random`` or the
public API.
"""

"""``hlox.experimental.xla_metadata``: attach XLA metadata (``frontend_attributes`` on HLO
instructions) to the ops of a program, for compiler-side tools (debuggers, fusion control).

Three ways, as ``jax.experimental.xla_metadata``:

- ``set_xla_metadata(**kw)`` as a context manager or decorator: every op lowered from an
  equation traced inside carries the pairs (the equations record them in their source
  information, so they survive ``grad``, ``vmap`` and nested ``jit``);
- ``set_xla_metadata(value, **kw)``: tags the op that produced ``value`` (each leaf of a
  pytree);
- ``xla_metadata_call`` / ``xla_metadata_call2``: the function becomes one tagged ``call``
  op, without changing the tracing context (no retrace of enclosing jitted functions).
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping

from hlox import _tree_transform as tree_util
from hlox.core import source_info as source_info_lib
from hlox.core.jaxpr import convert_constvars, trace_to_jaxpr
from hlox.core.tracer import get_aval
from hlox.lax.xla_metadata import xla_metadata_call_p, xla_metadata_value_p

__all__ = ["set_xla_metadata", "xla_metadata_call", "xla_metadata_call2", "fuse_limit",
           "must_fuse_call", "XlaMetadataContextManager"]


class _MetadataWrapped:
  """A function run inside a metadata block; its callable attributes (a jitted function's
  ``lower``, ``trace``, ...) run inside the block too, so ``f.lower(...)`` is tagged."""

  def __init__(self, fun, manager):
    self._fun = fun
    self._manager = manager
    # Name and docstring only: attributes (``lower``, ...) are looked up on ``fun`` when asked
    # for, so that the callable ones can be wrapped.
    functools.update_wrapper(self, fun, updated=())

  def __call__(self, *args, **kwargs):
    with self._manager:
      return self._fun(*args, **kwargs)

  def __getattr__(self, name):
    attr = getattr(self._fun, name)
    if not callable(attr):
      return attr

    @functools.wraps(attr)
    def in_block(*args, **kwargs):
      with self._manager:
        return attr(*args, **kwargs)
    return in_block


class XlaMetadataContextManager:
  """``set_xla_metadata(**kw)``: a context manager (re-entrant) and a decorator. A ``None``
  value removes that key inside the block."""

  __slots__ = ("updates", "_blocks")

  def __init__(self, updates: dict):
    self.updates = updates
    self._blocks = []

  def __enter__(self):
    block = source_info_lib.xla_metadata(self.updates)
    block.__enter__()
    self._blocks.append(block)

  def __exit__(self, *exc):
    self._blocks.pop().__exit__(*exc)

  def __call__(self, fun):
    return _MetadataWrapped(fun, self)


def set_xla_metadata(x=None, **kwargs):
  """Attach ``kwargs`` as XLA metadata.

  Without ``x``: a context manager / decorator tagging every op traced inside. With ``x`` (an
  array or pytree of arrays): ``x`` unchanged, its producing ops tagged. Values are written as
  strings (booleans as ``"true"``/``"false"``).
  """
  if x is None:
    return XlaMetadataContextManager(kwargs)
  pairs = tuple(sorted(kwargs.items()))
  return tree_util.tree_map(lambda v: xla_metadata_value_p.bind(v, xla_metadata_kvs=pairs), x)


@contextlib.contextmanager
def fuse_limit():
  """Ops traced inside carry ``FUSE_LIMIT="true"``: XLA does not fuse across them."""
  with set_xla_metadata(FUSE_LIMIT=True):
    yield


def must_fuse_call(identifier: str):
  """A decorator: the function becomes one call tagged ``MUST_FUSE=identifier``; XLA must
  fuse all of its ops into one fusion (failing to compile otherwise)."""
  return xla_metadata_call(MUST_FUSE=identifier)


def xla_metadata_call(f=None, /, **meta):
  """``f`` as one ``call`` op tagged with ``meta`` (values str, bool, int or float). Under
  ``grad`` the backward-pass call is tagged the same way. Without ``f``: a decorator."""
  if f is None:
    return lambda g: _wrap(g, meta, "same")
  return _wrap(f, meta, "same")


def xla_metadata_call2(f=None, /, metadata=None, *, ad_metadata="same"):
  """``xla_metadata_call`` with the metadata as a dict, and ``ad_metadata`` for the calls
  autodiff derives beyond the JVP (the linearized tangent and the transposed call):
  ``'same'`` (the default) tags them with ``metadata``, ``'drop'`` leaves them untagged, a
  dict tags them with that instead. Called with only a dict: a decorator."""
  if isinstance(f, Mapping) and metadata is None:
    f, metadata = None, f
  if f is not None and not callable(f):
    raise TypeError(f"xla_metadata_call2: expected a callable to wrap, got {f!r}")
  if f is None:
    return lambda g: _wrap(g, metadata, ad_metadata)
  return _wrap(f, metadata, ad_metadata)


def _as_pairs(meta) -> tuple:
  pairs = {}
  for k, v in meta.items():
    if isinstance(v, bool):
      pairs[k] = "true" if v else "false"
    elif isinstance(v, (str, int, float)):
      pairs[k] = str(v)
    else:
      raise TypeError(f"xla_metadata_call metadata values must be str, bool, int, or float, "
                      f"got {type(v)} for key {k!r}")
  return tuple(sorted(pairs.items()))


def _ad_pairs(ad_metadata):
  if isinstance(ad_metadata, str) and ad_metadata in ("same", "drop"):
    return "same" if ad_metadata == "same" else ()
  if isinstance(ad_metadata, Mapping):
    return _as_pairs(ad_metadata)
  raise TypeError(f"ad_metadata must be 'same', 'drop', or a dict of metadata, got "
                  f"{ad_metadata!r}")


def _wrap(fun, metadata, ad_metadata):
  if metadata is not None and not isinstance(metadata, Mapping):
    raise TypeError(f"xla_metadata_call: metadata must be a dict, got {metadata!r}")
  pairs = _as_pairs(metadata or {})
  ad_pairs = _ad_pairs(ad_metadata)

  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    out_tree_box = []

    def flat(*xs):
      a, kw = tree_util.tree_unflatten(in_tree, xs)
      out_leaves, out_tree = tree_util.tree_flatten(fun(*a, **kw))
      out_tree_box.append(out_tree)
      return out_leaves

    name = getattr(fun, "__name__", "fun")
    closed = trace_to_jaxpr(flat, [get_aval(x) for x in leaves], name, "xla_metadata_call")
    # Captured values (tracers of an enclosing trace among them) become leading arguments.
    closed, consts = convert_constvars(closed)
    outs = xla_metadata_call_p.bind(*consts, *leaves, jaxpr=closed, xla_metadata=pairs,
                                    ad_metadata=ad_pairs)
    return tree_util.tree_unflatten(out_tree_box[0], outs)
  return wrapped

"""``Exported.serialize`` / ``deserialize``: hlox's byte format for an ``Exported``, and the
registry of user pytree node types that may appear in its argument and result trees.

The format (hlox's own; JAX's flatbuffer is not reproduced) is

    b"HLOXEXP\\0"  u16 format version  u32 CRC-32 of the payload, then the payload:
    u32 header length  header (UTF-8 JSON)  module (the portable StableHLO artifact)
    [the VJP, serialized]

The header holds every field but the module; the VJP, when serialized (``vjp_order > 0``),
is a whole serialized ``Exported`` of its own, with one order less. A blob that does not
start with the magic, has a format version this hlox does not know, or fails its checksum
is refused with a ``ValueError`` saying which.
"""
from __future__ import annotations

import base64
import collections
import json
import struct
import types
import zlib
from typing import Any, Callable

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.shape_poly import is_symbolic_dim
from hlox.core.shape_poly_parser import symbolic_shape
from hlox.core.shape_poly_scope import SymbolicScope
from hlox.export import _export
from hlox.export._export import (DisabledSafetyCheck, Exported,
                                 maximum_supported_calling_convention_version,
                                 minimum_supported_calling_convention_version)
from hlox.runtime import sharding as sharding_lib

MAGIC = b"HLOXEXP\0"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sHI")  # magic, format version, CRC-32 of the payload

# --- user pytree nodes ---------------------------------------------------------------------

# type -> (serialized name, serialize_auxdata); serialized name -> (type,
# deserialize_auxdata, from_children)
_serializers: dict = {}
_deserializers: dict = {}


def _is_namedtuple(nodetype) -> bool:
  fields = getattr(nodetype, "_fields", None)
  return (isinstance(nodetype, type) and issubclass(nodetype, tuple) and
          isinstance(fields, tuple) and all(isinstance(f, str) for f in fields))


def register_pytree_node_serialization(nodetype, *, serialized_name: str,
                                       serialize_auxdata: Callable[[Any], bytes],
                                       deserialize_auxdata: Callable[[bytes], Any],
                                       from_children: Callable | None = None):
  """Let pytree nodes of ``nodetype`` appear in a serialized ``Exported``'s trees.

  ``serialized_name`` names the type in the bytes; ``serialize_auxdata(aux) -> bytes`` and
  ``deserialize_auxdata(bytes) -> aux`` carry the node's auxiliary data;
  ``from_children(aux, children)`` rebuilds a node (by default the unflatten function
  ``tree_util.register_pytree_node`` was given, which must then have been called). Returns
  ``nodetype``, so it works as a class decorator."""
  if nodetype in _serializers:
    raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. "
                     "Previous registration was with serialized_name "
                     f"`{_serializers[nodetype][0]}`.")
  if serialized_name in _deserializers:
    raise ValueError("Duplicate serialization registration for serialized_name "
                     f"`{serialized_name}`. Previous registration was for type "
                     f"`{_deserializers[serialized_name][0]}`.")
  if from_children is None:
    if not tree_util.is_tree_node(nodetype) or _is_namedtuple(nodetype):
      raise ValueError("If `from_children` is not present, you must call first"
                       f"`jax.tree_util.register_pytree_node` for `{nodetype}`")
    from_children = _registered_unflatten(nodetype)
  _serializers[nodetype] = (serialized_name, serialize_auxdata)
  _deserializers[serialized_name] = (nodetype, deserialize_auxdata, from_children)
  return nodetype


def _registered_unflatten(nodetype) -> Callable:
  """Build a ``nodetype`` node from its aux data and children with the unflatten function
  it was registered with (reached through a treedef of that node)."""
  def from_children(aux, children):
    subtrees = [tree_util.tree_structure(c) for c in children]
    leaves = [x for c in children for x in tree_util.tree_leaves(c)]
    node = type(subtrees[0] if subtrees else tree_util.tree_structure(None))
    treedef = node.from_node_data_and_children(tree_util.default_registry, (nodetype, aux),
                                               subtrees)
    return treedef.unflatten(leaves)
  return from_children


def register_namedtuple_serialization(nodetype, *, serialized_name: str):
  """Let the ``collections.namedtuple`` class ``nodetype`` appear in a serialized
  ``Exported``'s trees (its field names are stored and must match when read)."""
  if not _is_namedtuple(nodetype):
    raise ValueError("Use `jax.export.register_pytree_node_serialization` for types other "
                     "than `collections.namedtuple`.")

  def from_children(fields, children):
    return nodetype(**dict(zip(fields, children)))

  return register_pytree_node_serialization(
      nodetype, serialized_name=serialized_name,
      serialize_auxdata=lambda _: json.dumps(list(nodetype._fields)).encode(),
      deserialize_auxdata=lambda b: json.loads(bytes(b).decode()),
      from_children=from_children)


def _ordered_dict_keys(keys) -> bytes:
  if not all(isinstance(k, str) for k in keys):
    raise NotImplementedError("Serialization of collections.OrderedDict is supported only "
                              f"when the keys are strings. Found keys: {keys}.")
  return json.dumps(list(keys)).encode()


register_pytree_node_serialization(
    collections.OrderedDict, serialized_name="collections.OrderedDict",
    serialize_auxdata=_ordered_dict_keys,
    deserialize_auxdata=lambda b: tuple(json.loads(bytes(b).decode())))


# --- pieces of the header ----------------------------------------------------------------

def _tree_to_json(treedef) -> dict:
  node = treedef.node_data()
  children = [_tree_to_json(c) for c in treedef.children()]
  if node is None:
    return {"kind": "leaf"}
  nodetype, aux = node
  if nodetype is types.NoneType:
    return {"kind": "none"}
  if nodetype in (tuple, list):
    return {"kind": nodetype.__name__, "children": children}
  if nodetype is dict:
    for k in aux:
      if not isinstance(k, str):
        raise TypeError("Serialization is supported only for dictionaries with string "
                        f"keys. Found key {k} of type {type(k)}.")
    return {"kind": "dict", "keys": list(aux), "children": children}
  entry = _serializers.get(nodetype)
  if entry is None:
    raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type "
                     f"`{nodetype}`. Use `export.register_pytree_node_serialization` or "
                     "`export.register_namedtuple_serialization`.")
  name, serialize_aux = entry
  raw = serialize_aux(aux)
  if not isinstance(raw, (bytes, bytearray)):
    raise ValueError("The custom serialization function for `node_type` must return a "
                     f"`bytes` object. It returned a {type(raw)}.")
  return {"kind": "custom", "name": name, "aux": base64.b64encode(bytes(raw)).decode(),
          "children": children}


def _json_to_pytree(j: dict):
  kind = j["kind"]
  children = [_json_to_pytree(c) for c in j.get("children", ())]
  if kind == "leaf":
    return 0.0
  if kind == "none":
    return None
  if kind == "tuple":
    return tuple(children)
  if kind == "list":
    return children
  if kind == "dict":
    return dict(zip(j["keys"], children))
  if kind == "custom":
    entry = _deserializers.get(j["name"])
    if entry is None:
      raise ValueError(f"Cannot deserialize a PyTreeDef containing an unregistered type "
                       f"`{j['name']}`. Use `export.register_pytree_node_serialization` or "
                       "`export.register_namedtuple_serialization`.")
    _, deserialize_aux, from_children = entry
    return from_children(deserialize_aux(base64.b64decode(j["aux"])), children)
  raise ValueError(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")


def _json_to_tree(j: dict):
  return tree_util.tree_structure(_json_to_pytree(j))


_DTYPES = {d.name: d for d in (*dtypes.all_dtypes, *dtypes.narrow_float_dtypes)}


def _dtype_name(dtype) -> str:
  dtype = np.dtype(dtype)
  if dtype == dtypes.float0:
    return "float0"
  if _DTYPES.get(dtype.name) != dtype:
    raise NotImplementedError(f"serialization of arrays of dtype {dtype} is not supported")
  return dtype.name


def _dtype_of(name: str):
  if name == "float0":
    return dtypes.float0
  return _DTYPES[name]


def _aval_to_json(a) -> dict:
  if not isinstance(a, ShapedArray):
    raise NotImplementedError(f"serialization of values of type {a} is not supported")
  # A symbolic dimension is written as its text, read back with ``symbolic_shape``.
  return {"shape": [str(d) if is_symbolic_dim(d) else int(d) for d in a.shape],
          "dtype": _dtype_name(a.dtype), "weak_type": bool(a.weak_type)}


def _json_to_aval(j: dict, scope) -> ShapedArray:
  shape = tuple(symbolic_shape(d, scope=scope)[0] if isinstance(d, str) else d
                for d in j["shape"])
  return ShapedArray(shape, _dtype_of(j["dtype"]), j["weak_type"])


def _constraints(avals) -> list | None:
  """The constraints of the scope of the avals' symbolic dimensions (None: there are none;
  the dimensions of one export share one scope)."""
  for a in avals:
    for d in a.shape:
      if is_symbolic_dim(d):
        return [c.debug_str for c in d.scope._explicit_constraints]
  return None


def _spec_entry(e):
  return list(e) if isinstance(e, tuple) else e


def _sharding_to_json(s) -> dict | None:
  if s is None:
    return None
  mesh = s.mesh
  return {"axis_sizes": list(mesh.axis_sizes), "axis_names": list(mesh.axis_names),
          "axis_types": [t.name for t in getattr(mesh, "axis_types", ())],
          "spec": [_spec_entry(e) for e in s.spec]}


def _json_to_sharding(j):
  if j is None:
    return None
  types_ = tuple(getattr(sharding_lib.AxisType, t) for t in j["axis_types"]) or None
  mesh = sharding_lib.AbstractMesh(tuple(j["axis_sizes"]), tuple(j["axis_names"]),
                                   axis_types=types_)
  spec = sharding_lib.PartitionSpec(*(tuple(e) if isinstance(e, list) else e
                                      for e in j["spec"]))
  return sharding_lib.NamedSharding(mesh, spec)


# --- whole blobs -------------------------------------------------------------------------

def serialize(exp, vjp_order: int = 0) -> bytearray:
  """``exp`` as bytes (see the module docstring), with ``vjp_order`` levels of VJPs."""
  if not isinstance(vjp_order, int) or vjp_order < 0:
    raise ValueError(f"vjp_order must be a non-negative integer, got {vjp_order!r}")
  if exp.ordered_effects or exp.unordered_effects:
    raise NotImplementedError("serialization of an Exported with effects is not supported")
  vjp = exp.vjp().serialize(vjp_order - 1) if vjp_order > 0 else b""
  header = {
      "fun_name": exp.fun_name,
      "in_tree": _tree_to_json(exp.in_tree),
      "in_avals": [_aval_to_json(a) for a in exp.in_avals],
      "out_tree": _tree_to_json(exp.out_tree),
      "out_avals": [_aval_to_json(a) for a in exp.out_avals],
      "in_shardings": [_sharding_to_json(s) for s in exp._in_named_shardings],
      "out_shardings": [_sharding_to_json(s) for s in exp._out_named_shardings],
      "nr_devices": exp.nr_devices,
      "platforms": list(exp.platforms),
      "disabled_checks": [str(c) for c in exp.disabled_safety_checks],
      "calling_convention_version": exp.calling_convention_version,
      "module_kept_var_idx": list(exp.module_kept_var_idx),
      "uses_global_constants": exp.uses_global_constants,
      "module_size": len(exp.mlir_module_serialized),
      "has_vjp": vjp_order > 0,
      "symbolic_constraints": _constraints((*exp.in_avals, *exp.out_avals)),
  }
  head = json.dumps(header, separators=(",", ":")).encode()
  payload = struct.pack("<I", len(head)) + head + bytes(exp.mlir_module_serialized) + vjp
  return bytearray(_PREFIX.pack(MAGIC, FORMAT_VERSION, zlib.crc32(payload)) + payload)


def deserialize(blob) -> Exported:
  """The ``Exported`` that ``Exported.serialize`` wrote as ``blob``."""
  min_cc = minimum_supported_calling_convention_version
  max_cc = maximum_supported_calling_convention_version
  blob = bytes(blob)
  if len(blob) < _PREFIX.size or blob[:len(MAGIC)] != MAGIC:
    raise ValueError("deserialize: the bytes are not a serialized hlox Exported (they do not "
                     "start with the format's magic header)")
  _, version, crc = _PREFIX.unpack_from(blob)
  if version != FORMAT_VERSION:
    raise ValueError(f"deserialize: serialized Exported format version {version} is not "
                     f"supported (this hlox reads version {FORMAT_VERSION})")
  payload = blob[_PREFIX.size:]
  if len(payload) < 4 or zlib.crc32(payload) != crc:
    raise ValueError("deserialize: the serialized Exported is corrupt (checksum mismatch)")
  (head_len,) = struct.unpack_from("<I", payload)
  try:
    head = json.loads(payload[4:4 + head_len].decode())
  except ValueError as e:
    raise ValueError(f"deserialize: the serialized Exported is corrupt ({e})") from None
  start = 4 + head_len
  module = payload[start:start + head["module_size"]]
  rest = payload[start + head["module_size"]:]
  cc = head["calling_convention_version"]
  if not min_cc <= cc <= max_cc:
    raise ValueError(f"The serialized Exported has calling convention version {cc}, outside "
                     f"the range of supported versions [{min_cc}..{max_cc}]")
  vjp = deserialize(rest) if head["has_vjp"] else None
  constraints = head.get("symbolic_constraints")
  scope = SymbolicScope(constraints) if constraints is not None else None
  in_avals = tuple(_json_to_aval(a, scope) for a in head["in_avals"])
  out_avals = tuple(_json_to_aval(a, scope) for a in head["out_avals"])
  return Exported(
      fun_name=head["fun_name"], in_tree=_json_to_tree(head["in_tree"]), in_avals=in_avals,
      out_tree=_json_to_tree(head["out_tree"]), out_avals=out_avals,
      _has_named_shardings=True,
      _in_named_shardings=tuple(map(_json_to_sharding, head["in_shardings"])),
      _out_named_shardings=tuple(map(_json_to_sharding, head["out_shardings"])),
      in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
      nr_devices=head["nr_devices"], platforms=tuple(head["platforms"]), ordered_effects=(),
      unordered_effects=(),
      disabled_safety_checks=tuple(DisabledSafetyCheck(c) for c in head["disabled_checks"]),
      mlir_module_serialized=module, calling_convention_version=cc,
      module_kept_var_idx=tuple(head["module_kept_var_idx"]),
      uses_global_constants=head["uses_global_constants"],
      _get_vjp=(lambda _: vjp) if vjp is not None else None)


_export.set_serializer(serialize)

__all__ = ["serialize", "deserialize", "register_pytree_node_serialization",
           "register_namedtuple_serialization"]

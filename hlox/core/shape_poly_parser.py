"""The text form of symbolic shapes: ``symbolic_shape("b, 2*b + 1, floordiv(b, 2), _, ...")``.

Grammar (spaces are free; parentheses around the whole shape and a trailing comma are
allowed)::

    shape  := dim ("," dim)* ["," "..."] | "..."
    dim    := expr | "_"
    expr   := ["+" | "-"] term (("+" | "-") term)*
    term   := factor ["^" INT] ("*" factor ["^" INT])*
    factor := NAME | INT | "-" INT | OP "(" expr "," expr ")"    OP: floordiv mod max min

``_`` takes one dimension of ``like`` and ``...`` all its remaining ones.
"""
from __future__ import annotations

import re
from typing import Sequence

from hlox.core.shape_poly import _DimExpr, _DimFactor, is_constant_dim, max_dim, min_dim
from hlox.core.shape_poly_scope import SymbolicScope, _install_parser

_TOKEN = re.compile(r"\s*(?:(?P<ELLIPSIS>\.\.\.)|(?P<NAME>[A-Za-z_][A-Za-z0-9_]*)"
                    r"|(?P<NUMBER>[0-9][0-9A-Za-z_.]*)|(?P<OP>[-+*^(),]))")
_END = ("END", "", 0)
_OPERATIONS = (_DimFactor.FLOORDIV, _DimFactor.MOD, _DimFactor.MAX, _DimFactor.MIN)


class _Parser:
  """Recursive descent over a token list; ``self.dims`` are the dimensions parsed so far
  (error messages count them)."""

  def __init__(self, spec: str, like: Sequence | None, spec_repr: str, scope: SymbolicScope):
    self.spec = spec
    self.spec_repr = spec_repr
    self.like = like
    self.scope = scope
    self.dims: list = []
    self.tokens = self._tokenize()
    self.pos = 0

  def error(self, detail: str, at: int | None = None) -> ValueError:
    msg = (f"syntax error in symbolic shape {self.spec_repr} in dimension {len(self.dims)}: "
           f"{detail}. ")
    if at is None:
      at = self.tokens[self.pos][2] if self.pos < len(self.tokens) else len(self.spec)
    return ValueError(msg + f"Parsed '{self.spec[:at]}', remaining '{self.spec[at:]}'.")

  def _tokenize(self) -> list:
    tokens, at, text = [], 0, self.spec
    while at < len(text):
      m = _TOKEN.match(text, at)
      if m is None or m.end() == at:
        if not text[at:].strip():
          break
        self.tokens = []
        raise self.error(f"unexpected character {text[at:].lstrip()[0]!r}",
                         at=len(text) - len(text[at:].lstrip()))
      kind = m.lastgroup
      tokens.append((kind if kind != "OP" else m.group(kind), m.group(kind), m.start(kind)))
      at = m.end()
    tokens.append((*_END[:2], len(text)))
    return tokens

  @property
  def tok(self) -> str:
    return self.tokens[self.pos][0]

  def advance(self) -> str:
    text = self.tokens[self.pos][1]
    self.pos += 1
    return text

  def expect(self, *kinds: str) -> str:
    if self.tok not in kinds:
      raise self.error(f"expecting one of {{{', '.join(kinds)}}} but found {self.tok}")
    return self.advance()

  def parse(self) -> tuple:
    dims = self.shape()
    self.expect("END")
    return dims

  def add_dim(self, d):
    if d is None:
      raise self.error(f"unexpected placeholder for unknown dimension; like={self.like}")
    if self.like is not None and is_constant_dim(d):
      if d != self.like[len(self.dims)]:
        raise self.error(f"different size {d} for known dimension; like={self.like}")
    self.dims.append(d)

  def shape(self) -> tuple:
    if self.tok == "(":
      self.advance()
      dims = self.shape()
      self.expect(")")
      return dims
    while self.tok not in ("END", ")"):
      placeholder = self.tok == "ELLIPSIS" or (self.tok == "NAME" and
                                               self.tokens[self.pos][1] == "_")
      if placeholder:
        needed = len(self.dims) + (0 if self.tok == "ELLIPSIS" else 1)
        if self.like is None:
          raise self.error("spec contains ... but no 'like' shape was given")
        if len(self.like) < needed:
          raise self.error(
              f"cannot resolve placeholder '{self.tokens[self.pos][1]}' because we parsed "
              f"{len(self.dims)} already and 'like' shape has only {len(self.like)} "
              "dimensions")
      if self.tok == "ELLIPSIS":
        self.advance()
        for d in self.like[len(self.dims):]:
          self.add_dim(d)
        break
      if placeholder:
        self.advance()
        self.add_dim(self.like[len(self.dims)])
      else:
        self.add_dim(self.expr())
      if self.tok in ("END", ")"):
        break
      self.expect(",")
    return tuple(self.dims)

  def expr(self):
    negate = self.tok == "-"
    if self.tok in ("+", "-"):
      self.advance()
    total = None
    while True:
      t = self.term()
      t = -t if negate else t
      total = t if total is None else total + t
      if self.tok in ("END", ")", ","):
        return total
      negate = self.expect("+", "-") == "-"

  def term(self):
    product = None
    while True:
      f = self.factor()
      if self.tok == "^":
        self.advance()
        f = f ** self.integer()
      product = f if product is None else product * f
      if self.tok in ("END", ")", ",", "+", "-"):
        return product
      self.expect("*")

  def integer(self) -> int:
    text = self.tokens[self.pos][1]
    self.expect("NUMBER")
    try:
      return int(text)
    except ValueError:
      self.pos -= 1
      raise self.error(f"expecting integer, found {text}") from None

  def factor(self):
    if self.tok == "NAME":
      name = self.advance()
      if name in _OPERATIONS:
        return self.operation(name)
      return _DimExpr._from_var(name, self.scope)
    if self.tok == "-":  # a negative constant
      self.advance()
      return -self.integer()
    if self.tok == "NUMBER":
      return self.integer()
    raise self.error(f"expecting one of {{NAME, MINUS, NUMBER}} but found {self.tok}")

  def operation(self, name: str):
    self.expect("(")
    e1 = self.expr()
    self.expect(",")
    e2 = self.expr()
    self.expect(")")
    if name == _DimFactor.MAX:
      return max_dim(e1, e2)
    if name == _DimFactor.MIN:
      return min_dim(e1, e2)
    return _DimExpr._from_operation(name, e1, e2, scope=self.scope)


def _parse_dim(text: str, scope: SymbolicScope):
  """One dimension expression (a side of a constraint)."""
  d, = _Parser(text, None, repr(text), scope).parse()
  return d


_install_parser(_parse_dim)


def symbolic_shape(shape_spec, *, constraints=(), scope: SymbolicScope | None = None,
                   like=None) -> tuple:
  """The dimensions of a shape written as text, e.g. ``"b, 2*b, floordiv(b, 2), 4"``.

  ``shape_spec``: dimension expressions separated by commas (optionally in parentheses): an
  integer, a variable name, ``e1 + e2``, ``e1 - e2``, ``e1 * e2``, ``e ^ k``,
  ``floordiv(e1, e2)``, ``mod(e1, e2)``, ``max(e1, e2)``, ``min(e1, e2)``; ``_`` stands
  for the dimension of ``like`` at that place and ``...`` (or ``None`` for the whole spec)
  for all its remaining ones. ``constraints``: strings ``"e1 >= e2"``, ``"e1 <= e2"`` or
  ``"e1 == e2"`` for a new scope; or ``scope``: an existing ``SymbolicScope`` (not both).
  Returns a tuple of ints and symbolic dimensions.
  """
  spec_repr = repr(shape_spec)
  if shape_spec is None:
    shape_spec = "..."
  elif not isinstance(shape_spec, str):
    raise ValueError(f"polymorphic shape spec should be None or a string. Found {spec_repr}.")
  if scope is None:
    scope = SymbolicScope(constraints)
  elif constraints:
    raise ValueError("Cannot specify both a `scope` and `constraints`.")
  return _Parser(shape_spec, like, spec_repr, scope).parse()

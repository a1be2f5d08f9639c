"""A primitive without a rule says which one is missing, in JAX's words (which tests and
users match on)."""
import pytest

import hlox
from hlox.extend.core import Primitive
from hlox.interpreters import ad


def test_missing_rules_name_the_primitive():
  foo_p = Primitive("foo_missing_rules")
  foo = foo_p.bind
  with pytest.raises(NotImplementedError, match="^Evaluation rule for 'foo_missing_rules' "
                                                "not implemented"):
    foo(1.0)
  with pytest.raises(NotImplementedError, match="^Abstract evaluation for "
                                                "'foo_missing_rules' not implemented"):
    hlox.jit(foo)(1.0)
  with pytest.raises(NotImplementedError, match="^Differentiation rule for "
                                                "'foo_missing_rules' not implemented"):
    hlox.grad(foo)(1.0)
  foo_p.def_abstract_eval(lambda x: x)
  with pytest.raises(NotImplementedError, match="rule for primitive 'foo_missing_rules' "
                                                "not found for platform"):
    hlox.jit(foo)(1.0)
  foo_p.def_impl(lambda x: x)
  ad.defjvp(foo_p, lambda g, x: foo(g))
  with pytest.raises(NotImplementedError, match="^Transpose rule \\(for reverse-mode "
                                                "differentiation\\) for 'foo_missing_rules'"):
    hlox.grad(foo)(1.0)

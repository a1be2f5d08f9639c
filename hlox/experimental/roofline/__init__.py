"""Roofline estimates of a function (JAX's ``jax.experimental.roofline``): its flops, the
bytes it moves to and from memory and over the chip interconnect (ICI), and its peak
memory, counted per equation of its jaxpr by per-primitive rules, with nothing compiled or
run. ``roofline.py`` holds the result types, the interpreter and the rule table;
``rules.py`` the rules of hlox's primitives (imported here, so they are in place).
"""
from hlox.experimental.roofline.roofline import (  # noqa: F401
    RooflineResult, RooflineRuleContext, RooflineShape, register_roofline,
    register_standard_roofline, roofline, roofline_and_grad)
from hlox.experimental.roofline import rules  # noqa: F401  (registers the rules)

del rules

__all__ = ["RooflineResult", "RooflineRuleContext", "RooflineShape", "register_roofline",
           "register_standard_roofline", "roofline", "roofline_and_grad"]

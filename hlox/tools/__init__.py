"""Command-line and conversion tools (JAX's ``jax.tools``): programs that drive the public
API from outside, such as ``jax_to_ir`` (a function to XLA's HLO)."""

"""hlox's own fuzzer: seeded valid and invalid applications of lax/numpy function families.

``families`` is the table (each family's shape/dtype rules, its NumPy reference and how to
break it), ``runner`` draws applications from it, runs them eagerly and under ``jit``, and
classifies every outcome. ``python -m tests.fuzz --n 20000 --seed 1`` runs a long campaign.
"""

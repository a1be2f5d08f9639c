"""Test configuration: 8 CPU devices, jaxpr checks on, hypothesis profile for CI."""
import os

os.environ.setdefault("HLOX_NUM_CPU_DEVICES", "8")
os.environ.setdefault("HLOX_ENABLE_CHECKS", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=6, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

"""Test settings: hypothesis profiles sized for this 2-core machine, and shared fixtures."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow], derandomize=True,
)
settings.load_profile("default")

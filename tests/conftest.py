"""Test settings: hypothesis profiles sized for this 2-core machine, and shared fixtures."""

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow], derandomize=True,
)
settings.load_profile("default")


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray instance (2 CPUs) for the whole test session; ray.init takes seconds."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'resispec[scale]')")
    from sim.serving.runner_ray import start

    started = start(num_cpus=2)
    yield ray
    if started:
        ray.shutdown()

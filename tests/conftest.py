"""Test settings: hypothesis profiles, the ``slow`` tier, and shared fixtures.

Hypothesis profiles, chosen by the environment variable ``HYPOTHESIS_PROFILE`` (default ``ci``; the
plugin's own ``--hypothesis-profile`` option wins when given):

- ``ci``: derandomized, so every run (CI included) tries the same examples and a failure reproduces; no
  example database.
- ``explore``: fresh random examples every run, and an example database (``.hypothesis/examples`` at the
  repository root) that replays the failures it found first on the next run.

Under pytest-xdist each worker gets its share of the cores as its thread count (OpenMP, MKL, OpenBLAS,
numba; torch reads the first): two workers with two threads each on two cores ran the real-model tests
several times slower than one thread each. The modules with slow tests are collected first (longest first
balances the two workers; `pytest_collection_modifyitems`).

Both try up to 150 examples per test, sized for a 2-core machine (tests set fewer where one is costly).
The ``slow`` marker (registered in pyproject.toml) tags the theory run and Coq build, the sequence-level
exactness runs, the real-model stream audits and the training smoke tests; everything runs by default,
``-m "not slow"`` leaves them out locally (tests/README.md: the tiers and what each costs).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
if "PYTEST_XDIST_WORKER" in os.environ:  # the workers fill the cores: more threads each only contend (spin-waits)
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    for _name in THREAD_VARIABLES:  # before numpy, torch or numba first load (they read these once)
        os.environ.setdefault(_name, str(max(1, (os.cpu_count() or 1) // _workers)))

ROOT = Path(__file__).resolve().parents[1]
PROFILE_VARIABLE = "HYPOTHESIS_PROFILE"
DEFAULT_PROFILE = "ci"
SIZED_FOR_THIS_MACHINE = dict(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", derandomize=True, database=None, **SIZED_FOR_THIS_MACHINE)
settings.register_profile("explore", derandomize=False,
                          database=DirectoryBasedExampleDatabase(ROOT / ".hypothesis" / "examples"),
                          **SIZED_FOR_THIS_MACHINE)
PROFILES = ("ci", "explore")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules holding a ``slow`` or ``real_model`` test run first, each module's tests kept together
    and in order: xdist hands tests out one at a time in collection order, so a minute-long test
    collected last left one worker idle at the end while the other finished it."""
    heavy = {item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("real_model")}
    items.sort(key=lambda item: item.path not in heavy)


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("hypothesis_profile", None):
        return
    profile = os.environ.get(PROFILE_VARIABLE) or DEFAULT_PROFILE
    if profile not in PROFILES:
        raise pytest.UsageError(f"{PROFILE_VARIABLE}: expected one of {', '.join(PROFILES)}, got {profile!r}")
    settings.load_profile(profile)


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray instance (2 CPUs) for the whole test session; ray.init takes seconds."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'resispec[scale]')")
    from resispec.sim.serving.runner_ray import start

    started = start(num_cpus=2)
    yield ray
    if started:
        ray.shutdown()

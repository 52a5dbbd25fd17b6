"""The first ``generate`` on a machine says up front what it will build and about how long (issue 46: a cold
``generate`` took 11 min 44 s building four caches, announced as "about a minute")."""

from __future__ import annotations

import pytest

from resispec.cli import main
from resispec.engine.model import first_run as first_run_module
from resispec.engine.model.first_run import FIRST_RUN_CPU_SECONDS, estimate_seconds, first_run, first_run_notice


def test_an_empty_cache_is_a_first_run_and_the_notice_names_every_build(monkeypatch, tmp_path):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    assert first_run()
    notice = first_run_notice(load=8.0, cores=2)
    assert "dequantized checkpoint" in notice and "calibration" in notice and str(tmp_path) in notice
    assert "about 5 min 52 s here" in notice


def test_the_estimate_scales_the_measured_cpu_time_by_the_load_per_core():
    assert estimate_seconds(load=0.5, cores=2) == FIRST_RUN_CPU_SECONDS
    assert estimate_seconds(load=8.0, cores=2) == pytest.approx(4 * FIRST_RUN_CPU_SECONDS)


def test_generate_prints_the_notice_before_it_loads_anything(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    from resispec.engine.model import models

    def stop(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(models, "load_target", stop)
    monkeypatch.setattr(first_run_module.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert main(["generate", "--prompt", "hi", "--max-new-tokens", "1"]) == 130
    err = capsys.readouterr().err
    assert err.index("resispec: first run on this machine: building, once,") < err.index("interrupted")
    assert "about 1 min 28 s here" in err

"""``audit_sampler`` runs the sampler in a process of its own (``resispec.audit.sampler.isolation``): nothing the
sampler does (exits at import or in a call, forks, signals, prints, hangs with the alarm blocked) ends or fakes
the audit; each gets its own exit-2 line, a print goes to stderr, and the file is a real module (dataclasses
under ``from __future__ import annotations``, pickling, a ``multiprocessing.Pool`` over its own functions)."""

import json
import os
import sys
import textwrap
import time

import pytest

from resispec.audit.sampler import SamplerError, audit_sampler, zoo_sampler
from resispec.cli import main

HOSTILE = textwrap.dedent('''
    import os, signal, sys, time
    from resispec.audit.sampler import zoo_sampler

    exact = zoo_sampler("rrs")

    def exits(p, q, candidates):
        sys.exit(3)

    def exits_zero(p, q, candidates):
        sys.exit(0)

    def hard_exit(p, q, candidates):
        os._exit(0)

    def killed(p, q, candidates):
        os.kill(os.getpid(), signal.SIGKILL)

    def forks(p, q, candidates):
        os.fork()
        return exact(p, q, candidates)

    def prints(p, q, candidates):
        print("hello from the sampler")
        os.write(1, b"raw bytes on descriptor 1\\n")  # below Python's sys.stdout
        return exact(p, q, candidates)

    def deaf(p, q, candidates):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        time.sleep(60)

    def interrupts(p, q, candidates):
        raise KeyboardInterrupt

    def wants_rng(p, q, candidates, rng):
        return exact(p, q, candidates)
''')

FRIENDLY = textwrap.dedent('''
    from __future__ import annotations

    import multiprocessing
    import pickle
    from dataclasses import dataclass

    import numpy as np

    from resispec.audit.sampler import zoo_sampler

    exact = zoo_sampler("rrs")
    POOL = []


    @dataclass
    class Config:
        scale: float = 1.0


    def one_row(row):
        p, q, candidates = row
        return int(exact(p[None], q[None], candidates[None])[0])


    def pooled(p, q, candidates):
        assert pickle.loads(pickle.dumps(Config(2.0))) == Config(2.0)
        if not POOL:
            POOL.append(multiprocessing.get_context("fork").Pool(1))
        return np.array(POOL[0].map(one_row, list(zip(p, q, candidates))), dtype=np.int64)
''')


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "hostile.py").write_text(HOSTILE)
    (tmp_path / "friendly.py").write_text(FRIENDLY)
    (tmp_path / "exit_at_import.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "hard_exit_at_import.py").write_text("import os\nos._exit(0)\n")
    (tmp_path / "fork_at_import.py").write_text(
        "import os\nfrom resispec.audit.sampler import zoo_sampler\nos.fork()\nexact = zoo_sampler('rrs')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("target, message", [
    ("hostile.py:exits", "called sys.exit(3) (call 1); the audit did not run to its end"),
    ("hostile.py:exits_zero", "called sys.exit(0) (call 1)"),
    ("hostile.py:hard_exit", "its process exited with status 0 (os._exit or a crash) (call 1)"),
    ("hostile.py:killed", "its process was killed by SIGKILL (call 1)"),
    ("hostile.py:forks", "a process it forked (pid"),
    ("hostile.py:interrupts", "the audit stopped on KeyboardInterrupt"),
    ("hostile.py:wants_rng", "the sampler takes rng; declare --extras rng"),
    ("exit_at_import.py:f", "called sys.exit(0) (importing exit_at_import.py)"),
    ("hard_exit_at_import.py:f", "exited with status 0 (os._exit or a crash) (importing hard_exit_at_import.py)"),
    ("fork_at_import.py:exact", "a process it forked (pid"),
])
def test_a_sampler_that_ends_its_process_gets_a_named_exit_2_line(folder, capsys, target, message):
    status = main(["audit-sampler", target, "--k", "2", "--samples", "50", "--json"])
    captured = capsys.readouterr()
    assert status == 2 and not captured.out, captured
    assert captured.err.startswith("resispec audit-sampler: error: sampler") or "extras" in captured.err
    assert message in captured.err and "Traceback" not in captured.err


def test_a_hang_with_the_alarm_blocked_is_killed_at_the_time_limit(folder, capsys):
    start = time.monotonic()
    status = main(["audit-sampler", "hostile.py:deaf", "--k", "2", "--time-limit", "0.3"])
    err = capsys.readouterr().err
    assert status == 2 and "did not return within the time limit of 0.3 s (call 1)" in err
    assert time.monotonic() - start < 30  # 0.3 s, the 2 s grace, the start under load


def test_prints_go_to_stderr_and_json_stays_alone_on_stdout(folder, capsys):
    status = main(["audit-sampler", "hostile.py:prints", "--k", "2", "--samples", "100", "--json"])
    captured = capsys.readouterr()
    assert status == 0 and json.loads(captured.out)["verdict"] == "PASS", captured.err
    assert "sampler stdout: hello from the sampler" in captured.err
    assert "sampler stdout: raw bytes on descriptor 1" in captured.err
    assert "more line(s) not shown" in captured.err  # relayed up to RELAYED_LINES, the rest counted


def test_the_file_is_a_real_module_so_dataclasses_pickling_and_pools_work(folder, capsys):
    status = main(["audit-sampler", "friendly.py:pooled", "--k", "2", "--samples", "20"])
    assert status == 0 and "verdict: PASS" in capsys.readouterr().out


def test_the_api_isolates_a_callable_too():
    with pytest.raises(SamplerError, match=r"called sys.exit\(0\) \(call 1\)"):
        audit_sampler(lambda p, q, c: sys.exit(0), "node", samples=20, pairs=["dirichlet-1"])
    with pytest.raises(SamplerError, match="exited with status 7"):
        audit_sampler(lambda p, q, c: os._exit(7), "node", samples=20, pairs=["dirichlet-1"])
    report = audit_sampler(zoo_sampler("rrs"), "node", samples=50, pairs=["dirichlet-1"])
    assert report.verdict == "PASS"
    with pytest.raises(ValueError, match="drafting: expected one of"):
        audit_sampler(zoo_sampler("rrs"), "node", drafting="bogus")


@pytest.mark.parametrize("options, message", [
    ({"samples": 10**12}, "samples: samples per context = 1000000000000 exceeds the limit"),
    ({"time_limit": 1e300}, "time_limit: 1e\\+300 s exceeds the limit MAX_TIME_LIMIT"),
])
def test_the_api_bounds_samples_and_the_time_limit_before_starting(options, message):
    with pytest.raises(ValueError, match=message):
        audit_sampler(zoo_sampler("rrs"), "node", **options)


def test_a_torch_sampler_runs_after_this_process_ran_parallel_torch_work():
    """A child forked after OpenMP's threads started deadlocks in its first parallel region unless it runs on one
    thread (the child's default)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        matrix = torch.randn(1500, 1500)
        (matrix @ matrix).sum()
        exact = zoo_sampler("rrs")
        report = audit_sampler(lambda p, q, c: ((matrix @ matrix).sum(), exact(p, q, c))[1], "node", samples=20,
                               pairs=["dirichlet-1"], time_limit=20)
    finally:
        torch.set_num_threads(threads)
    assert report.verdict in ("PASS", "UNTESTED")

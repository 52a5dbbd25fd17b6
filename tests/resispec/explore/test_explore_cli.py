"""`resispec explore` refuses a port in use or a bad host with one line on stderr and exit status 2, and ends on
Ctrl-C with one line and exit status 130."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from resispec.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_a_port_in_use_gets_one_line_and_exit_2(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["explore", "--port", str(port), "--no-browser"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"resispec explore: error: --port: port {port} on 127.0.0.1 is already in use; "
                            "pick another with --port\n")


def test_a_bad_host_gets_one_line_and_exit_2(capsys):
    for host in ("no-such-host.invalid", "203.0.113.7"):  # unresolvable; a TEST-NET address not on this machine
        assert main(["explore", "--host", host, "--no-browser"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("resispec explore: error: --host: ") and err.count("\n") == 1 and host in err


def test_a_port_out_of_range_gets_one_line_and_exit_2(capsys):
    assert main(["explore", "--port", "70000", "--no-browser"]) == 2
    assert capsys.readouterr().err == ("resispec explore: error: argument --port: expected a port in [0, 65535], "
                                       "got 70000\n")



@pytest.mark.slow
def test_ctrl_c_ends_the_server_with_one_line_and_exit_130():
    """The server catches SIGINT itself and used to return silently (issue 46); now one line, as every command."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "resispec", "explore", "--no-browser", "--port", str(free)],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{free}/", timeout=5).close()
            break
        except OSError:
            time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("SIGINT did not stop the explorer within 30 s")
    assert process.returncode == 130
    assert err.strip().splitlines() == ["resispec explore: interrupted; nothing half-written is left"]

"""`resispec explore` refuses a port in use or a bad host with one line on stderr and exit status 2."""

from __future__ import annotations

import socket

from resispec.cli import main


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


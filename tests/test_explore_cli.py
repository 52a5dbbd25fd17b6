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
    assert captured.err == f"resispec explore: --port: port {port} on 127.0.0.1 is already in use; pick another with --port\n"


def test_a_bad_host_gets_one_line_and_exit_2(capsys):
    for host in ("no-such-host.invalid", "203.0.113.7"):  # unresolvable; a TEST-NET address not on this machine
        assert main(["explore", "--host", host, "--no-browser"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("resispec explore: --host: ") and err.count("\n") == 1 and host in err


def test_a_port_out_of_range_gets_one_line_and_exit_2(capsys):
    assert main(["explore", "--port", "70000", "--no-browser"]) == 2
    assert capsys.readouterr().err == "resispec explore: --port: expected 0..65535, got 70000\n"


def test_the_core_and_the_simulator_never_import_the_explorer():
    """The explorer is an application layer: only the CLI and its own benchmark may import it."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    allowed = {root / "resispec" / "explore", root / "resispec" / "cli", root / "resispec" / "benchmarks" / "explore_redraw.py"}
    for package in ("resispec", "sim", "engine", "theory"):
        for path in (root / package).rglob("*.py"):
            if any(path == place or place in path.parents for place in allowed):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                assert not any(name.startswith("resispec.explore") for name in names), path

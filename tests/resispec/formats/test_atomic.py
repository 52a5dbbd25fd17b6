"""``resispec.formats.atomic``: a regular file or a new path is staged and renamed; a character device or a FIFO
is written through and stays what it was; anything else is refused; a full device ends in one line naming the
path; nothing half-written is left."""

import os
import socket
import stat
import threading

import pytest

from resispec.cli import main
from resispec.formats.atomic import atomic_path, atomic_write_text, staged_directory


@pytest.fixture
def devices(tmp_path):
    """Private nodes of ``/dev/full`` (1, 7) and ``/dev/null`` (1, 3) in ``tmp_path`` (root only: ``mknod``), so a
    regression replaces a copy, never the system's nodes."""
    nodes = {}
    for name, minor in (("full", 7), ("null", 3)):
        try:
            os.mknod(tmp_path / name, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        except PermissionError:
            pytest.skip("mknod needs root")
        nodes[name] = tmp_path / name
    return nodes


def _siblings(folder):
    return sorted(path.name for path in folder.iterdir())


def test_a_regular_file_is_replaced_and_nothing_is_left_on_failure(tmp_path):
    target = tmp_path / "x.txt"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError
    assert target.read_text() == "old" and _siblings(tmp_path) == ["x.txt"]
    atomic_write_text(target, "new")
    assert target.read_text() == "new" and _siblings(tmp_path) == ["x.txt"]


def test_a_symlink_is_kept_and_the_file_it_leads_to_is_replaced(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    atomic_write_text(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


def test_a_full_device_ends_in_one_line_naming_it_and_stays_a_device(devices, capsys):
    full = devices["full"]
    with pytest.raises(OSError, match=rf"^cannot write {full}: No space left on device$"):
        atomic_write_text(full, "x" * 100_000)
    assert stat.S_ISCHR(os.stat(full).st_mode) and os.stat(full).st_rdev == os.makedev(1, 7)
    assert f"{full} is a character device; written through" in capsys.readouterr().err


def test_dev_null_is_written_through(devices):
    atomic_write_text(devices["null"], "gone")
    assert stat.S_ISCHR(os.stat(devices["null"]).st_mode)
    assert sorted(path.name for path in devices["null"].parent.iterdir()) == ["full", "null"]


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "through the pipe")
    reader.join(10)
    assert received == ["through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert _siblings(tmp_path) == ["pipe"]


def test_a_folder_a_socket_and_a_dangling_link_are_refused(tmp_path):
    with pytest.raises(OSError, match="is a folder; refusing to write it"):
        atomic_write_text(tmp_path, "x")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "socket"))
    try:
        with pytest.raises(OSError, match="not a regular file, a character device or a FIFO"):
            atomic_write_text(tmp_path / "socket", "x")
    finally:
        server.close()
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    with pytest.raises(OSError, match="symlink to a missing path"):
        atomic_write_text(tmp_path / "dangling", "x")
    assert stat.S_ISSOCK(os.lstat(tmp_path / "socket").st_mode) and (tmp_path / "dangling").is_symlink()


def test_a_set_never_replaces_a_file(tmp_path):
    (tmp_path / "out").write_text("mine")
    with pytest.raises(OSError, match="not a folder"), staged_directory(tmp_path / "out"):
        pass
    assert (tmp_path / "out").read_text() == "mine"


def test_the_cli_writing_to_dev_full_exits_2_naming_it(tmp_path, devices, capsys):
    import numpy as np
    import pyarrow.parquet as pq

    from resispec.formats.node_writer import nodes_table

    rows = 20
    (tmp_path / "nodes").mkdir()
    pq.write_table(nodes_table({
        "node_id": np.arange(rows), "verifier": "rrs", "token_ids": np.tile(np.arange(3), (rows, 1)),
        "p": np.full((rows, 3), 0.3), "q": np.full((rows, 3), 0.3), "p_tail": np.full(rows, 0.1),
        "q_tail": np.full(rows, 0.1), "candidates": np.tile(np.arange(2), (rows, 1)),
        "emitted": np.zeros(rows, dtype=int), "accepted_index": np.zeros(rows, dtype=int)}, 10),
        tmp_path / "nodes" / "a.parquet")
    status = main(["log", "convert", str(tmp_path / "nodes"), str(devices["full"])])
    err = capsys.readouterr().err
    assert status == 2 and err.strip().splitlines()[-1] == (
        f"resispec log convert: error: cannot write {devices['full']}: No space left on device")
    assert stat.S_ISCHR(os.stat(devices["full"]).st_mode)

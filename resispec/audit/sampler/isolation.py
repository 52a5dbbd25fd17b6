"""The audit of a sampler in a process of its own: nothing the sampler does can end, fake or hijack the audit.

``audit_sampler(sampler, level, ...)`` forks a child that imports the sampler (a ``FILE.py:FUNCTION`` spec, as a
real module in ``sys.modules``) or takes the callable handed over, runs the in-process audit
(``resispec.audit.sampler.audit.audit_sampler``) and sends back one result over a pipe. The parent owns the
verdict, stdout and the clock:

- a result counts only if it comes from the child's own pid with the run's nonce (a process the sampler forked
  that returns into the audit is reported, never a second report);
- the child exiting by any route (``sys.exit`` at import or in a call, ``os._exit``, a signal, a crash) before
  its result is a ``SamplerError`` naming the exit and the phase it happened in (importing, call N);
- each call of the sampler is announced to the parent, which kills the child's process group when a call runs
  past ``time_limit`` plus ``KILL_GRACE`` seconds (the child's own SIGALRM comes first unless the sampler
  ignores it);
- the child's stdout is a pipe the parent relays to stderr (at most ``RELAYED_LINES`` lines), so ``--json``
  stays the only thing on stdout.

The verdict is a ``SamplerReport`` only when the audit ran to its end. Errors: the child's ``ValueError`` is
raised again in the parent (a ``SamplerError`` carries ``details``: the last frames in the sampler's own file
and the shapes of the failing call); any other failure of the child is a ``SamplerError`` too.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pickle
import secrets
import selectors
import signal
import struct
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from resispec.audit.sampler.audit import audit_sampler as audit_in_process
from resispec.audit.sampler.contract import (
    DEFAULT_TIME_LIMIT,
    SamplerContract,
    SamplerError,
    as_ids,
    as_inputs,
    call_sampler,
    check_extras,
    extra_arguments,
)
from resispec.audit.sampler.report import SamplerReport
from resispec.limits import MAX_AUDIT_SAMPLES, MAX_TIME_LIMIT, check_limit
from resispec.processing import Processing

DEFAULT_K = 2
"""Candidates per node where the audit is not asked to infer them (the in-process audit's default)."""

MAX_K = 8
"""Candidate counts a probe tries when ``k=None`` (the contract's range)."""

KILL_GRACE = 2.0
"""Seconds past the time limit before the parent kills a call that its own alarm did not stop."""

IMPORT_TIME_LIMIT = 60.0
"""Seconds the sampler's file may take to import (at least; the time limit where it is longer)."""

POLL_SECONDS = 0.2
"""How often the parent checks the clock and whether the child has ended."""

DRAIN_SECONDS = 0.5
"""Seconds the parent keeps reading after the child ended (what was in flight, a fork's notice)."""

RELAYED_LINES = 20
"""Lines of the sampler's stdout relayed to stderr; the rest are counted."""

_HEADER = struct.Struct(">16sQQ")
"""Each message: the run's nonce, the sender's pid, the pickle's length."""


def load_sampler(spec: str) -> Callable[..., Any]:
    """The function ``FUNCTION`` of ``FILE.py:FUNCTION``, its file imported as a real module (registered in
    ``sys.modules`` under the file's stem, or ``audited_sampler_<stem>`` where that name is taken, with the
    file's folder on ``sys.path``), so dataclasses, pickling and pools over its functions work; ``ValueError``
    in one line naming the problem."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise ValueError(f"sampler: expected FILE.py:FUNCTION, got {spec!r}")
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"sampler: no file {path}")
    module_name = file.stem if file.stem.isidentifier() and file.stem not in sys.modules else \
        f"audited_sampler_{file.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, file)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"sampler: {path} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(file.resolve().parent))
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:  # the user's file: any failure to import it is their mistake, in one line
        del sys.modules[module_name]
        raise ValueError(f"sampler: cannot import {path}: {type(error).__name__}: {error}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"sampler: {path} has no function {name!r}")
    return function


def audit_sampler(sampler: Callable[..., Any] | str, level: str = "node", *, threads: int = 1,
                  **options: Any) -> SamplerReport:
    """``resispec.audit.sampler.audit.audit_sampler(fn, level, **options)`` run in a forked child (module
    doc); ``sampler`` is the callable or a ``FILE.py:FUNCTION`` spec imported in the child; ``k=None`` (node
    level): the one candidate count the sampler takes, found by probe calls (``_inferred_k``). Returns the
    ``SamplerReport``; raises the audit's ``ValueError`` or a ``SamplerError`` naming how the sampler ended
    the child."""
    time_limit = options.get("time_limit", DEFAULT_TIME_LIMIT)
    if isinstance(time_limit, (int, float)) and time_limit > MAX_TIME_LIMIT:
        raise ValueError(f"time_limit: {time_limit:g} s exceeds the limit MAX_TIME_LIMIT = {MAX_TIME_LIMIT:g} s "
                         "(resispec.limits)")
    samples = options.get("samples")
    if isinstance(samples, int):
        check_limit(samples, MAX_AUDIT_SAMPLES, "samples", "samples per context")
    return _Supervisor(time_limit).run(functools.partial(_audit_in_child, sampler, level, threads, options))


audit_sampler.__doc__ = (audit_sampler.__doc__ or "") + "\n\nThe audit itself:\n" + (audit_in_process.__doc__ or "")


def _audit_in_child(sampler: Callable[..., Any] | str, level: str, threads: int, options: dict, channel: _Channel
                    ) -> Any:
    if "torch" in sys.modules or options.get("arrays") == "torch":
        import torch

        torch.set_num_threads(threads)
    if isinstance(sampler, str):
        channel.phase(f"importing {sampler.rpartition(':')[0]}", max(channel.time_limit, IMPORT_TIME_LIMIT))
        fn = load_sampler(sampler)
        channel.guard_fork()
    else:
        fn = sampler
    channel.idle()
    watched = channel.watched(fn)
    if options.get("k", DEFAULT_K) is None:
        if level == "node":  # before the probe calls; the audit checks it again
            check_extras(fn, tuple(options.get("extras", ())))
        options = {**options, "k": _inferred_k(watched, channel, options) if level == "node" else DEFAULT_K}
    return audit_in_process(watched, level, **options)


def _inferred_k(fn: Callable[..., Any], channel: _Channel, options: dict) -> int:
    """The one candidate count in ``[1, MAX_K]`` for which one probe call of ``fn`` (one row, V = 8, uniform
    p and q) returns a valid output; ``ValueError`` asking for ``k`` when it takes several (a sampler that
    takes any k may be meant for one and ignore the rest); ``DEFAULT_K`` when it takes none (the audit then
    reports why)."""
    SamplerContract(level="node", k=DEFAULT_K, arrays=options.get("arrays", "numpy"),  # the claims, checked first
                    dtype=options.get("dtype", "float64"), inputs=options.get("inputs", "probs"),
                    processing=options.get("processing") or Processing(), extras=tuple(options.get("extras", ())),
                    drafting=options.get("drafting", "iid"), q_layout=options.get("q_layout", "paths"))
    vocab = 8
    taken = []
    for k in range(1, MAX_K + 1):
        contract = SamplerContract(level="node", k=k, arrays=options.get("arrays", "numpy"),
                                   dtype=options.get("dtype", "float64"), inputs=options.get("inputs", "probs"),
                                   extras=tuple(options.get("extras", ())),
                                   time_limit=options.get("time_limit", DEFAULT_TIME_LIMIT))
        uniform = np.full((1, vocab), 1.0 / vocab)
        arguments = (as_inputs(uniform, contract, np.zeros(1)), as_inputs(uniform, contract, np.zeros(1)),
                     as_ids(np.arange(k)[None] % vocab, contract))
        try:
            call_sampler(fn, contract, arguments, extra_arguments(contract, [None], None, k), (1,), f"probe k = {k}")
        except SamplerError:
            continue
        taken.append(k)
    channel.calls = 0
    if len(taken) == 1:
        return taken[0]
    if taken:
        raise ValueError(f"k: the sampler takes {len(taken)} candidate counts ({taken[0]} to {taken[-1]}); say "
                         "which it is meant for with --k (k= in the API), or it may pass while ignoring candidates")
    return DEFAULT_K


class _Channel:
    """The child's end: announces phases and calls, sends the one result (module doc)."""

    def __init__(self, descriptor: int, nonce: bytes, pid: int, time_limit: float):
        self.descriptor, self.nonce, self.pid, self.time_limit = descriptor, nonce, pid, time_limit
        self.calls = 0
        self.current = "starting"
        self.details: list[str] = []

    def send(self, message: tuple) -> None:
        data = pickle.dumps(message)
        view = memoryview(_HEADER.pack(self.nonce, os.getpid(), len(data)) + data)
        while view:
            view = view[os.write(self.descriptor, view):]

    def phase(self, name: str, limit: float) -> None:
        """A timed phase begins: the parent kills the child past ``limit`` seconds plus ``KILL_GRACE``."""
        self.current = name
        self.send(("phase", name, limit))

    def idle(self) -> None:
        self.current = "between calls"
        self.send(("idle",))

    def guard_fork(self) -> None:
        """In a process the sampler forked that came back into the audit: say so and end it."""
        if os.getpid() != self.pid:
            self.send(("forked", os.getpid()))
            os._exit(0)

    def watched(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` announcing each call, recording where it raised (``details``), guarding against forks."""
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.phase(f"call {self.calls}", self.time_limit)
            try:
                value = fn(*args, **kwargs)
            except Exception as error:
                self.details = _frames(error, fn) + [_arguments(args, kwargs)]
                raise
            finally:
                self.guard_fork()
            self.idle()
            return value

        return call


def _frames(error: BaseException, fn: Callable[..., Any]) -> list[str]:
    """The last frames of ``error``'s traceback in ``fn``'s own file (else the last frames), as lines."""
    frames = traceback.extract_tb(error.__traceback__)[1:]  # the first is ``watched``'s own call
    own = getattr(getattr(fn, "__code__", None), "co_filename", None)
    mine = [frame for frame in frames if frame.filename == own] or frames
    lines = []
    for frame in mine[-3:]:
        lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line}")
    return lines


def _arguments(args: tuple, kwargs: dict) -> str:
    """The failing call's arguments: dtype and shape of arrays, the first row of integer ones."""
    def describe(value: Any) -> str:
        shape = getattr(value, "shape", None)
        if shape is None:
            return f"{type(value).__name__}" + (f" of {len(value)}" if isinstance(value, list) else "")
        text = f"{str(value.dtype).replace('torch.', '')} {tuple(shape)}"
        if str(value.dtype).endswith(("int64", "int32")) and len(shape) >= 1 and shape[0]:
            text += f" (first row {value[0].tolist()})"
        return text

    parts = [describe(value) for value in args] + [f"{name}={describe(value)}" for name, value in kwargs.items()]
    return f"  the failing call: fn({', '.join(parts)})"


class _Supervisor:
    """The parent's end: forks the child, relays its stdout, enforces the clock, reads the one result."""

    def __init__(self, time_limit: float):
        self.time_limit = time_limit
        self.nonce = secrets.token_bytes(16)
        self.phase: str | None = "starting"
        self.limit = max(time_limit, IMPORT_TIME_LIMIT)
        self.deadline = time.monotonic() + self.limit + KILL_GRACE
        self.relayed = self.unrelayed = 0
        self.forked: list[int] = []

    def run(self, work: Callable[[_Channel], Any]) -> Any:
        message_read, message_write = os.pipe()
        output_read, output_write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(message_read)
            os.close(output_read)
            _child(work, _Channel(message_write, self.nonce, os.getpid(), self.time_limit), output_write)
        os.close(message_write)
        os.close(output_write)
        self.pid = pid
        try:
            os.setpgid(pid, pid)
        except OSError:  # the child set it already (or exited)
            pass
        try:
            return self._supervise(message_read, output_read)
        finally:
            _kill_group(pid)
            os.close(message_read)
            os.close(output_read)
            if self.unrelayed:
                print(f"sampler stdout: ... {self.unrelayed} more line(s) not shown", file=sys.stderr)

    def _supervise(self, message_read: int, output_read: int) -> Any:
        """Read messages and relay output until the child has ended and its pipes are drained; kill it when a
        timed phase runs past its limit."""
        selector = selectors.DefaultSelector()
        selector.register(message_read, selectors.EVENT_READ, "message")
        selector.register(output_read, selectors.EVENT_READ, "output")
        buffer, result, status, ended_at = b"", None, None, 0.0
        while selector.get_map():
            now = time.monotonic()
            if self.phase is not None and now > self.deadline:
                raise SamplerError(f"sampler: did not return within the time limit of {self.limit:g} s "
                                   f"({self.phase}); it blocked the audit's alarm, so its process was killed")
            if status is not None and now > ended_at + DRAIN_SECONDS:
                break  # the child has ended; what still holds its pipes is a process the sampler started
            for key, _ in selector.select(POLL_SECONDS):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fd)
                elif key.data == "output":
                    self._relay(data)
                else:
                    buffer, found = self._messages(buffer + data)
                    result = found if found is not None else result
            if self.forked:  # stop at the first notice: the child would fork again at every call
                break
            if status is None:
                status = _reaped(self.pid)
                ended_at = time.monotonic()
        if self.forked:
            raise SamplerError(f"sampler: a process it forked (pid {self.forked[0]}) returned into the audit; end "
                               "forked processes with os._exit, or use multiprocessing")
        if result is None:
            status = status if status is not None else _wait(self.pid)
            raise SamplerError(f"sampler: {_ending(status)} ({self.phase or 'between calls'}); the audit did not "
                               "run to its end")
        return _outcome(result)

    def _messages(self, buffer: bytes) -> tuple[bytes, tuple | None]:
        """Every whole message in ``buffer``: the rest, and the result if one came."""
        result = None
        while len(buffer) >= _HEADER.size:
            nonce, pid, length = _HEADER.unpack_from(buffer)
            if len(buffer) < _HEADER.size + length:
                break
            data, buffer = buffer[_HEADER.size:_HEADER.size + length], buffer[_HEADER.size + length:]
            if nonce != self.nonce:
                continue
            message = pickle.loads(data)
            if message[0] == "forked" or pid != self.pid:
                self.forked.append(message[1] if message[0] == "forked" else pid)
            elif message[0] == "phase":
                self.phase, self.limit = message[1], message[2]
                self.deadline = time.monotonic() + self.limit + KILL_GRACE
            elif message[0] == "idle":
                self.phase = None
            else:
                result = message
        return buffer, result

    def _relay(self, data: bytes) -> None:
        lines = data.decode("utf-8", "replace").splitlines()
        for line in lines:
            if self.relayed < RELAYED_LINES:
                print(f"sampler stdout: {line}", file=sys.stderr)
                self.relayed += 1
            else:
                self.unrelayed += 1


def _child(work: Callable[[_Channel], Any], channel: _Channel, output_write: int) -> None:
    """Run ``work`` and send its result; stdout goes to the parent's relay; always ends by ``os._exit``."""
    status = 0
    try:
        os.setpgid(0, 0)
        os.dup2(output_write, 1)
        os.close(output_write)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        try:
            value = work(channel)
            message: tuple = ("result", value)
        except ValueError as error:
            details = channel.details if isinstance(error, SamplerError) and "raised" in str(error) else []
            message = ("error", type(error).__name__, str(error), details)
        except SystemExit as done:
            message = ("error", "SamplerError", f"sampler: called sys.exit({done.code!r}) ({channel.current}); the "
                       "audit did not run to its end", [])
        except BaseException as error:  # the sampler's or the audit's: reported by the parent, never a pass
            message = ("error", "SamplerError", f"sampler: the audit stopped on {type(error).__name__}: "
                       f"{' '.join(str(error).split())[:300]}", _frames(error, work))
        channel.guard_fork()
        sys.stdout.flush()
        try:
            channel.send(message)
        except (pickle.PicklingError, TypeError, AttributeError) as error:  # e.g. an exception holding a lambda
            channel.send(("error", "SamplerError", f"sampler: the audit's outcome could not be sent back "
                          f"({type(error).__name__}: {error})", []))
    except BaseException:  # nothing of the child's may run on in the parent's code
        status = 1
    finally:
        os._exit(status)


def _outcome(message: tuple) -> Any:
    if message[0] == "result":
        return message[1]
    _, kind, text, details = message
    error = SamplerError(text) if kind == "SamplerError" else ValueError(text)
    error.details = details
    raise error


def _reaped(pid: int) -> int | None:
    """The child's wait status if it has ended (reaped), else None."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return 0
    return status if done else None


def _wait(pid: int) -> int:
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


def _ending(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"its process was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"its process exited with status {os.waitstatus_to_exitcode(status)} (os._exit or a crash)"


def _kill_group(pid: int) -> None:
    """SIGKILL the child's process group (the child and whatever it started), then reap the child."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _wait(pid)

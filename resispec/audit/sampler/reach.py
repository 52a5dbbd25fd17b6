"""Where a sampler keeps the NumPy generators it made before the call, so the edge probe can reach them.

The most common NumPy style makes one generator at import (``rng = np.random.default_rng()`` at module level) or
binds one to the function (a default argument, a closure, ``functools.partial(..., rng=...)``). Such a generator is
not made during the call, so forcing ``numpy.random.default_rng`` cannot reach it. ``swapped_generators`` replaces
every ``numpy.random.Generator`` / ``RandomState`` found in these places by the probe's generator for the duration
of the block, and puts the originals back after it:

- the globals of the function's module (so a helper in the same file that draws from them is reached too);
- the function's closure cells and default arguments (positional and keyword-only);
- a ``functools.partial``'s bound arguments, and the same places of the function it wraps.

A generator elsewhere (another module's global, an attribute of an object) is not reached; the probe then forces
nothing and the report says so ("not reachable"). torch generators need no swap: the probe's
``TorchFunctionMode`` forces every draw made with any generator.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

GENERATORS = (np.random.Generator, np.random.RandomState)


def _slots(fn: Any) -> list[tuple[Any, Any]]:
    """``(container, key)`` of every place of ``fn`` (module doc) holding a NumPy generator; a container is a dict,
    a closure cell (key None), or a function whose ``__defaults__`` index is the key; a wrapper (``functools.wraps``:
    a decorator, the isolated audit's call watcher) is looked through to ``__wrapped__``."""
    slots: list[tuple[Any, Any]] = []
    if isinstance(fn, functools.partial):
        slots += [(fn.keywords, key) for key, value in fn.keywords.items() if isinstance(value, GENERATORS)]
        return slots + _slots(fn.func)
    function = getattr(fn, "__func__", fn)
    for cell in getattr(function, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell
            if isinstance(cell.cell_contents, GENERATORS):
                slots.append((cell, None))
    defaults = getattr(function, "__defaults__", None) or ()
    slots += [(function, index) for index, value in enumerate(defaults) if isinstance(value, GENERATORS)]
    keyword_defaults = getattr(function, "__kwdefaults__", None) or {}
    slots += [(keyword_defaults, key) for key, value in keyword_defaults.items() if isinstance(value, GENERATORS)]
    module_globals = getattr(function, "__globals__", None)
    if module_globals is not None:
        slots += [(module_globals, key) for key, value in module_globals.items() if isinstance(value, GENERATORS)]
    wrapped = getattr(fn, "__wrapped__", None)
    return slots + _slots(wrapped) if wrapped is not None else slots


def _get(container: Any, key: Any) -> Any:
    if key is None:
        return container.cell_contents
    if callable(container) and isinstance(key, int):
        return container.__defaults__[key]
    return container[key]


def _set(container: Any, key: Any, value: Any) -> None:
    if key is None:
        container.cell_contents = value
    elif callable(container) and isinstance(key, int):
        defaults = list(container.__defaults__)
        defaults[key] = value
        container.__defaults__ = tuple(defaults)
    else:
        container[key] = value


@contextlib.contextmanager
def swapped_generators(fn: Callable[..., Any], replacement: Any) -> Iterator[int]:
    """Inside the block every NumPy generator of ``fn``'s places (module doc) is ``replacement``; yields how many
    were swapped; the originals are back after the block, also when it raises."""
    slots = list({(id(container), key): (container, key) for container, key in _slots(fn)}.values())
    originals = [_get(container, key) for container, key in slots]
    try:
        for container, key in slots:
            _set(container, key, replacement)
        yield len(slots)
    finally:
        for (container, key), original in zip(slots, originals):
            _set(container, key, original)

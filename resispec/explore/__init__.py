"""``resispec explore``: residual drift you can see and touch, in the browser (or a notebook).

An application layer on top of the core and the simulator (the core never imports it): ``model``
turns a state (p, q, k, verifiers, seed) into the displayed numbers, all from the toolkit's exact
functions; ``presets`` builds starting pairs; ``view`` lays them out with Panel over Bokeh;
``server`` serves the page; ``redraw_timing`` times a redraw (``resispec bench explore``). In a notebook::

    import panel as pn; pn.extension()
    from resispec.explore import app
    app()
"""

from __future__ import annotations


def app(**state):
    """The explorer as a Panel layout (the same one ``resispec explore`` serves); keyword arguments
    set the initial state (see ``resispec.explore.view.Explorer``). Needs the ``explore`` extra."""
    from resispec.explore.view import Explorer

    return Explorer(**state).layout


__all__ = ["app"]

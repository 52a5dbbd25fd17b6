"""Serving the explorer: check the address, then hand the page to Panel's (Bokeh's) server."""

from __future__ import annotations

import errno
import socket


class AddressError(ValueError):
    """The host does not resolve to a local address, or the port is taken."""


def check_address(host: str, port: int) -> None:
    """Bind ``(host, port)`` once and release it; ``AddressError`` with one clear sentence otherwise."""
    if not 0 <= port <= 65535:
        raise AddressError(f"--port: expected 0..65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise AddressError(f"--host: cannot resolve {host!r} ({error})") from None
    family, kind, protocol, _, address = infos[0]
    with socket.socket(family, kind, protocol) as probe:
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise AddressError(
                    f"--port: port {port} on {host} is already in use; pick another with --port") from None
            raise AddressError(f"--host: cannot listen on {host}:{port} ({error.strerror or error})") from None


def serve(host: str = "127.0.0.1", port: int = 5006, open_browser: bool = True, threaded: bool = False):
    """Serve the explorer at ``http://host:port/`` (one fresh page per browser tab): until interrupted,
    or, with ``threaded``, from a background thread whose server is returned (stop it with ``.stop()``)."""
    check_address(host, port)
    import panel as pn

    from resispec.explore.view import Explorer

    pn.extension()
    return pn.serve({"/": lambda: Explorer().layout}, address=host, port=port, show=open_browser,
                    title="resispec explore", threaded=threaded, print_url=not threaded,
                    websocket_origin=[f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"])

"""The bounds of ``gatebench serve`` (docs/frontend.md, "What keeps it bounded"), apart from
the server so that the command line can show their defaults without loading the web package."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServeLimits:
    """The bounds of ``gatebench serve``: what each refuses and why is in the docstring of
    ``gatebench.web._server`` and in docs/frontend.md."""

    max_queued: int = 10
    """Runs that may wait at once (the running one not counted): 429 beyond."""
    max_parses: int = 2
    """Uploads read and checked at once; each holds its body and its parsed description."""
    max_connections: int = 32
    """Connections served at once, each by a thread: 503 at once beyond."""
    read_timeout: float = 10.0
    """Seconds a request's head may take to arrive, whatever the pace of its bytes; a body
    gets this plus its length at ``min_body_rate``."""
    min_body_rate: int = 64 * 1024
    """Bytes per second a body must average (a 25 MB upload gets 10 + 381 s)."""
    parse_wait: float = 30.0
    """Seconds an upload waits for a free parse slot before it is told to come back (503)."""

    def body_deadline(self, length: int) -> float:
        return self.read_timeout + length / self.min_body_rate


__all__ = ["ServeLimits"]

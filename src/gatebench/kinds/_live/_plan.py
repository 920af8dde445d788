"""What the route-scale and change-under-load runs refuse of a benchmark section.

These runs take their settings from the command line or the upload's request, not from the
plan (docs/scale.md), so the raw section is read: a description that asks for a deployment
they cannot build is refused with located errors rather than measured plain.
"""

from __future__ import annotations

from typing import Any

from gatebench.core.errors import Problem


def scale_problems(
    section: Any, base: str = "/x-gatebench", source: str | None = None
) -> list[Problem]:
    """What these runs cannot measure of a section's deployment (docs/scale.md, "TLS and
    replicas"): TLS, backend replicas or a fault, refused rather than measured plain, in
    front of one backend."""
    if not isinstance(section, dict):
        return []
    where = (
        "these runs load and probe each gateway over plain HTTP/1.1, in front of one echo "
        "backend at a time; run this plan with `gatebench run`, or scale a copy of the "
        'description without the key (docs/scale.md, "TLS and replicas")'
    )
    out = []
    if section.get("tls") not in (None, False):
        out.append(
            Problem(f"{base}/tls", f"scale and change-under-load do not carry TLS yet: {where}")
        )
    backend = section.get("backend")
    if isinstance(backend, dict) and backend.get("replicas") not in (None, 1):
        out.append(
            Problem(
                f"{base}/backend/replicas",
                f"scale and change-under-load do not start backend replicas yet: {where}",
            )
        )
    if section.get("fault") is not None:
        out.append(
            Problem(f"{base}/fault", f"scale and change-under-load inject no fault: {where}")
        )
    return [Problem(p.pointer, p.message, source=source) if source else p for p in out]


__all__ = ["scale_problems"]

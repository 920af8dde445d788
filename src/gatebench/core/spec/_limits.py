"""Safety limits applied while reading an API description.

Every limit exists because an uploaded spec is untrusted input: a spec may be large, but
it may not make gatebench allocate without bound, recurse without bound or read outside
the files it was given.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 25_000_000
    """Total bytes read: the document plus every file it includes, or a zip's unpacked size."""
    max_depth: int = 128
    """Nesting of mappings and sequences, in any one document."""
    max_nodes: int = 5_000_000
    """Values in a document after YAML aliases are expanded (the billion-laughs guard)."""
    max_files: int = 2_000
    """Files in a folder or zip bundle."""
    max_include_depth: int = 32
    """Chained ``!include`` / cross-file ``$ref`` hops."""


DEFAULT_LIMITS = Limits()

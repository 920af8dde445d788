"""gatebench's version, said once for every report, the command line and the package
(``pyproject.toml`` carries the same number for the wheel; tests/unit/test_version.py compares
them)."""

__version__ = "0.1.0"

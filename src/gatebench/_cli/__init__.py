"""Command modules of the ``gatebench`` CLI: each has ``add_parser(subparsers)``."""

"""``python -m gatebench.cli``: the ``gatebench`` command."""

import sys

from gatebench.cli import main

sys.exit(main())

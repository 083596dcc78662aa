"""``python -m bench``: see :mod:`bench.cli`."""

import sys

from .cli import main

sys.exit(main())

"""Entry point: ``python -m spec_map <command>`` (see :mod:`spec_map.cli`)."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())

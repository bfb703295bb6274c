"""Entry point of ``python -m training``."""

import sys

from training.cli import main

sys.exit(main())

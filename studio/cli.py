"""The `harness-studio` command: Django's management commands for this project.

`harness-studio migrate`, `harness-studio seed_demo`, `harness-studio runserver`
work from any directory once the package is installed (same as manage.py).
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Django's command-line utility for Harness Studio (same as the `harness-studio` command)."""

from studio.cli import main

if __name__ == "__main__":
    main()

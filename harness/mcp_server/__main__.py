"""``python -m harness.mcp_server [--http PORT] [--catalogue FILE]`` (same as ``python -m harness
serve-mcp``)."""

import sys

from harness.cli import main

sys.exit(main(["serve-mcp", *sys.argv[1:]]))

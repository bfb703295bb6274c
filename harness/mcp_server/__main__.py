"""``python -m harness.mcp_server [--http PORT] [--catalogue FILE]`` (same as ``python -m harness serve-mcp``)."""

import argparse

from harness.mcp_server.server import serve

parser = argparse.ArgumentParser(prog="python -m harness.mcp_server")
parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP at /mcp on PORT")
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--catalogue", help="catalogue JSON (default: $HARNESS_CATALOGUE or the demo)")
args = parser.parse_args()
serve(catalogue_path=args.catalogue, http_port=args.http, host=args.host)

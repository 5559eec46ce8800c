#!/usr/bin/env bash
# JupyterLab over this checkout from its virtual environment (.venv, installed from
# requirements.lock by scripts/bootstrap.sh), for hosts without Docker: `make notebooks`.
# It listens on 127.0.0.1 only and always with a token (MPTCPLAB_JUPYTER_TOKEN, or a fresh
# random one), printed with the URL of the landing notebook. Its root is the checkout, so
# notebooks/, results/ and labs/ sit side by side as in the Jupyter image.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${MPTCPLAB_JUPYTER_PORT:-8888}
token=${MPTCPLAB_JUPYTER_TOKEN:-$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(20))')}
[ -x .venv/bin/jupyter-lab ] || { echo "notebooks.sh: no JupyterLab in .venv (run scripts/bootstrap.sh)" >&2; exit 3; }
args=(--ip=127.0.0.1 --port="$port" --no-browser --ServerApp.root_dir="$PWD"
      --ServerApp.port_retries=0)
# Jupyter refuses root unless told; a lab run from a notebook cell needs root anyway
[ "$(id -u)" = 0 ] && args+=(--allow-root)
echo "JupyterLab on 127.0.0.1:$port; open"
echo "  http://127.0.0.1:$port/lab/tree/notebooks/index.ipynb?token=$token"
echo "Ctrl-C stops it."
# jupyter_server reads the token from JUPYTER_TOKEN (not on the command line: ps would show it)
export JUPYTER_TOKEN=$token
exec .venv/bin/jupyter-lab "${args[@]}"

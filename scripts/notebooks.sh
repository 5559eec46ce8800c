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
# Not exec'd: this shell stops the server. On SIGTERM jupyter_server stops its event loop, shuts
# its kernels down, and then its interpreter waits for the AnyIO worker threads of any request
# that was in flight (a page still loading): those threads are stopped only when their request
# finishes, which never happens, and the process hangs for good (seen with jupyter-server 2.21,
# anyio 4). So: SIGTERM, up to GRACE seconds for a clean stop (its kernels are shut down within
# that), then SIGKILL. stdin is /dev/null: the server then does not ask "Shutdown this Jupyter
# server (y/[n])?" on Ctrl-C; this shell's trap answers Ctrl-C instead.
grace=${MPTCPLAB_JUPYTER_STOP_GRACE:-30}
.venv/bin/jupyter-lab "${args[@]}" < /dev/null &
server=$!
stop() {
  trap '' INT TERM
  kill -TERM "$server" 2>/dev/null || exit 0
  for _ in $(seq 1 $((grace * 5))); do
    kill -0 "$server" 2>/dev/null || exit 0
    sleep 0.2
  done
  echo "notebooks.sh: JupyterLab did not exit within ${grace} s of SIGTERM; killing it" >&2
  kill -KILL "$server" 2>/dev/null
  exit 0
}
trap stop INT TERM
wait "$server"

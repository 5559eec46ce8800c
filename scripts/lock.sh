#!/usr/bin/env bash
# Regenerate requirements.lock: every Python package of the engine, its tests and `make notebooks`
# (the test and notebooks extras), pinned,
# with the sha256 of every distribution file PyPI serves for that version (pip-compile
# --generate-hashes), so `pip install --require-hashes` installs exactly these bytes on
# Debian 12 (Python 3.11) and Ubuntu 24.04 (3.12). Run after changing pyproject.toml's
# dependencies; commit the result. scripts/bootstrap.sh installs from the lock only.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
/usr/bin/python3 -m venv "$tools"
"$tools/bin/pip" install -q pip-tools
# a machine-local wheel directory (PIP_FIND_LINKS) must not end up in the lock
unset PIP_FIND_LINKS
# --allow-unsafe: setuptools is pinned too (the editable install is built without
# build isolation, from the lock, not from whatever PyPI serves that day)
"$tools/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --extra test --extra notebooks \
  --no-emit-index-url --no-emit-find-links --output-file requirements.lock pyproject.toml
# the build backend of the project itself
echo "setuptools>=68" > "$tools/build.in"
cp requirements-build.lock "$tools/" 2>/dev/null || true  # keep today's pin unless it must change
(cd "$tools" && bin/pip-compile -q --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
  --no-emit-find-links --output-file requirements-build.lock build.in)
mv "$tools/requirements-build.lock" requirements-build.lock

# the Jupyter image's analysis stack (Debian 12's Python 3.11 inside the image)
(cd images/jupyter && "$tools/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links --output-file requirements.txt requirements.in)
echo "requirements.lock, requirements-build.lock and images/jupyter/requirements.txt written"

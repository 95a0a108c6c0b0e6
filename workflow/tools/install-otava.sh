#!/usr/bin/env bash
# Installs apache-otava's command line at the versions pinned in requirements-otava.txt into its
# own environment, .tools/otava (PyPI). Idempotent: does nothing when that environment was built
# from the current requirements-otava.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."

DIR=.tools/otava
if [[ -x $DIR/bin/otava ]] && cmp -s requirements-otava.txt "$DIR/.netstick-requirements"; then
  exit 0
fi
echo "install-otava: apache-otava -> $DIR (requirements-otava.txt)"
rm -rf "$DIR"
python3 -m venv "$DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check -r requirements-otava.txt
cp requirements-otava.txt "$DIR/.netstick-requirements"

#!/usr/bin/env bash
# Installs the GitHub Actions linters that `make lint` runs, at pinned versions:
#   actionlint  built from source with `go install` into .tools/bin (the Go module proxy)
#   zizmor      from PyPI, pinned in requirements.txt, so it is already in .venv after setup
# Idempotent: does nothing when .tools/bin/actionlint already reports the pinned version.
set -euo pipefail
cd "$(dirname "$0")/../.."

ACTIONLINT_VERSION=v1.7.12
BIN=$PWD/.tools/bin

# The Go toolchain that workflow/setup.sh chose (its own copy in .tools/go, or the system one).
GO=go
[[ -x .tools/go/bin/go ]] && GO=$PWD/.tools/go/bin/go

if [[ -x $BIN/actionlint ]] && "$BIN/actionlint" -version | head -1 | grep -qx "$ACTIONLINT_VERSION"; then
  exit 0
fi
mkdir -p "$BIN"
echo "install-linters: actionlint $ACTIONLINT_VERSION -> .tools/bin/actionlint"
# GOFLAGS (a caller's -mod=...) applies to the project's modules, not to this install.
if ! GOBIN=$BIN GOFLAGS= GOTOOLCHAIN=local "$GO" install \
  "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"; then
  echo "install-linters: go install github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION failed" >&2
  exit 1
fi

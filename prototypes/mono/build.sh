#!/usr/bin/env bash
# Builds the mono prototype: Netstick.Core's sources and this directory's into bin/netstick-mono.exe
# with mono's mcs, in the C# 7.2 subset that Unity's compiler takes too. Run it from anywhere.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
core=$here/../unity/Netstick.Core
command -v mcs >/dev/null || {
  echo "build.sh: 'mcs' not found (the C# compiler): install Debian's mono-devel, or \`nix develop\`" >&2
  exit 1
}
mkdir -p "$here/bin"
# Into a temporary file first, so a failed build never leaves a half-written executable behind.
tmp=$(mktemp "$here/bin/.netstick-mono.XXXXXX.exe")
trap 'rm -f "$tmp"' EXIT
mcs -langversion:7.2 -warnaserror+ -nologo -debug- -optimize+ -target:exe -r:Mono.Posix.dll \
  -out:"$tmp" "$core"/*.cs "$here"/*.cs
mv "$tmp" "$here/bin/netstick-mono.exe"
trap - EXIT
echo "build.sh: built $here/bin/netstick-mono.exe"

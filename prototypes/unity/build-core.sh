#!/usr/bin/env bash
# Builds Netstick.Core (prototypes/CONTRACT.md in plain C#) with mono's mcs into
# bin/Netstick.Core.dll, then its NUnit 2.6 tests, and runs them with nunit-console.
# Exit status: 0 when everything compiled and every test passed.
#   build-core.sh            build and test
#   build-core.sh --no-test  build bin/Netstick.Core.dll only
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$here/bin
run_tests=1
case ${1:-} in
  --no-test) run_tests=0 ;;
  "") ;;
  *) echo "build-core.sh: unknown argument '$1' (expected: --no-test)" >&2; exit 2 ;;
esac

need() { # command, what for, how to get it
  command -v "$1" >/dev/null || {
    echo "build-core.sh: '$1' not found ($2): $3" >&2
    exit 1
  }
}
need mcs "the C# compiler" "install Debian's mono-devel (apt-get install mono-devel), or \`nix develop\`"
need mono "the runtime" "install Debian's mono-devel (apt-get install mono-devel), or \`nix develop\`"

# C# 7.2, the language both mono 6.8's mcs and Unity's Roslyn compile.
MCS=(mcs -langversion:7.2 -warnaserror+ -nologo -debug- -optimize+)
mkdir -p "$bin"
"${MCS[@]}" -target:library -out:"$bin/Netstick.Core.dll" "$here"/Netstick.Core/*.cs
echo "build-core.sh: built $bin/Netstick.Core.dll"
((run_tests)) || exit 0

need nunit-console "the test runner" "install Debian's nunit-console and libnunit-cil-dev (apt-get install nunit-console libnunit-cil-dev)"
nunit_dir=${NUNIT_FRAMEWORK_DIR:-/usr/lib/cli/nunit.framework-2.6.3}
if [[ ! -f $nunit_dir/nunit.framework.dll ]]; then
  echo "build-core.sh: $nunit_dir/nunit.framework.dll not found: install Debian's libnunit-cil-dev (or set NUNIT_FRAMEWORK_DIR)" >&2
  exit 1
fi
"${MCS[@]}" -target:library -r:"$bin/Netstick.Core.dll" -r:"$nunit_dir/nunit.framework.dll" \
  -out:"$bin/Netstick.Core.Tests.dll" "$here"/Netstick.Core.Tests/*.cs
cp "$nunit_dir/nunit.framework.dll" "$bin/"
# -noshadow: run from bin/, so the tests find the repository's files relative to their assembly.
cd "$bin"
nunit-console -nologo -noshadow -xml="$bin/TestResult.xml" "$bin/Netstick.Core.Tests.dll"

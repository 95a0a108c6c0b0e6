#!/usr/bin/env bash
# Installs what Netstick needs — only what is missing, so it is cheap to run before every make
# target. Sources: Debian's apt, the Go module proxy (which also serves Go toolchains) and PyPI.
# Nothing else is contacted.
#
#   workflow/setup.sh [--for run|test]
#
# --for run: what `make run` needs (Go, the venv, the emulator, iproute2, the report's tools);
# --for test (the default): also what the tests need (SLURM, MariaDB, chromium, ethtool).
# Three ways to get the system tools, chosen in this order:
#   nix    inside `nix develop` (the flake sets NETSTICK_NIX=1): the shell provides them; no apt,
#          its Go is used as is;
#   apt    as root with apt-get: missing Debian packages are installed;
#   user   otherwise, or with NETSTICK_NO_APT=1: nothing system-wide is installed; everything
#          possible goes into the checkout (Go toolchain and modules in .tools, the venv), what
#          is missing is listed with how to get it, and without libenet the reference is built
#          without its enet transport (CGO_ENABLED=0; see .tools/netstick-build.env).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "netstick setup: $*" >&2; }
FOR=test
while (($#)); do
  case $1 in
    --for) FOR=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
    --for=*) FOR=${1#--for=}; shift ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) log "unknown argument '$1' (expected: --for run|test)"; exit 2 ;;
  esac
done
case $FOR in run | test) ;; *) log "--for: expected run or test, got '$FOR'"; exit 2 ;; esac

if [[ -n ${NETSTICK_NIX:-} || -n ${IN_NIX_SHELL:-} ]]; then
  MODE=nix
elif [[ ${NETSTICK_NO_APT:-0} != 1 && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null && command -v dpkg-query >/dev/null; then
  MODE=apt
else
  MODE=user
fi

# Seconds of each step, written to .venv/netstick-setup.json when something was installed (the
# artifact's "time to prepare", report/artifact.py).
steps=() installed=0 t_step=0
step_start() { t_step=$(date +%s.%N); }
step_done() { steps+=("\"$1\": $(awk -v a="$t_step" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')"); }

# -- System packages -----------------------------------------------------------------------
# What a run needs: the cgo build with libenet, Python, the Go download, process and network
# tools, and the report (R's figure packages, poppler for the PDF's page images).
RUN_PACKAGES=(libenet-dev pkg-config gcc libc6-dev python3 python3-venv ca-certificates curl unzip procps iproute2 r-base-core r-cran-ggplot2 r-cran-knitr r-cran-rmarkdown r-cran-data.table r-cran-jsonlite poppler-utils)
# What only the tests need: a local SLURM cluster, NIC counters, the browser prototypes, and mono
# with NUnit for Netstick.Core and the C# prototype prototypes/mono (a campaign naming that
# prototype needs mono-devel too; its build says so when mcs is missing), and valgrind for the
# callgrind cells (server_profiler callgrind; a run asking for it says so when it is missing).
TEST_PACKAGES=(ethtool slurm-wlm munge slurmdbd mariadb-server chromium mono-devel nunit-console libnunit-cil-dev valgrind)
APT_PACKAGES=("${RUN_PACKAGES[@]}")
[[ $FOR == test ]] && APT_PACKAGES+=("${TEST_PACKAGES[@]}")
R_PACKAGES=(ggplot2 knitr rmarkdown data.table jsonlite)

if [[ $MODE == apt ]]; then
  missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    step_start
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
    step_done apt_s && installed=1
  fi
else
  # No package manager of ours: check the commands, say what is missing and how to get it.
  # command:what-it-is-for:where-to-get-it (Debian package; the flake provides all of them)
  checks=("python3:the venv:python3 python3-venv" "ip:network namespaces (isolation netns):iproute2"
    "pgrep:process monitoring:procps" "pdftoppm:the report's page images:poppler-utils"
    "mcs:building the C# prototype and Netstick.Core:mono-devel" "mono:running the C# prototype:mono-devel")
  [[ $FOR == test ]] && checks+=("ethtool:NIC counters in tests:ethtool" "sbatch:the SLURM tests:slurm-wlm munge slurmdbd"
    "mysqld:the SLURM accounting tests:mariadb-server" "chromium:the browser prototypes:chromium"
    "nunit-console:Netstick.Core's tests (make test-csharp):nunit-console libnunit-cil-dev")
  absent=()
  for c in "${checks[@]}"; do
    IFS=: read -r cmd why pkgs <<<"$c"
    # Daemons and NIC tools live in sbin, which a user's PATH often lacks.
    command -v "$cmd" >/dev/null || [[ -x /usr/sbin/$cmd || -x /sbin/$cmd ]] || absent+=("$cmd ($why; Debian: $pkgs)")
  done
  if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    log "error: python3 with the venv and ensurepip modules is required (Debian: python3-venv; or \`nix develop\`)"
    exit 1
  fi
  if command -v Rscript >/dev/null; then
    r_missing=$(Rscript -e 'for (p in commandArgs(TRUE)) if (!requireNamespace(p, quietly = TRUE)) cat(p, "")' "${R_PACKAGES[@]}" 2>/dev/null) || r_missing="${R_PACKAGES[*]}"
    [[ -n ${r_missing// /} ]] && absent+=("R packages: $r_missing(Debian: r-cran-*; or in R: install.packages(c(\"${r_missing% }\")) into R_LIBS_USER)")
  else
    absent+=("Rscript (the report's R figures; Debian: r-base-core r-cran-{ggplot2,knitr,rmarkdown,data.table,jsonlite}; or \`nix develop\`; without R the report is rendered by the venv's typst)")
  fi
  if ((${#absent[@]})); then
    log "mode $MODE: not installed (nothing system-wide is installed without root and apt):"
    for a in "${absent[@]}"; do log "  - $a"; done
  fi
fi

# libenet decides whether the reference has its enet transport: with a system libenet (and a C
# compiler) it is linked through cgo; without, it is built with CGO_ENABLED=0 and `enet` fails
# every run that names it ("enet transport unavailable"). make build reads this file.
mkdir -p .tools
if command -v pkg-config >/dev/null && pkg-config --exists libenet && command -v "${CC:-gcc}" >/dev/null; then
  printf 'export CGO_ENABLED=1\n' >.tools/netstick-build.env
else
  printf 'export CGO_ENABLED=0\n' >.tools/netstick-build.env
  log "warning: no libenet (pkg-config libenet) or no C compiler: the reference is built WITHOUT the enet transport; runs naming enet will fail (Debian: libenet-dev gcc; or \`nix develop\`)"
  [[ $FOR == test ]] && log "warning: \`make test\` needs cgo (go test -race, the enet tests): use --for run, or install libenet-dev gcc"
fi

# -- Go toolchain --------------------------------------------------------------------------
# go.mod names the exact Go version. Debian 12 ships Go 1.19, so when no new enough Go is on
# PATH, the toolchain is fetched from the Go module proxy (golang.org/toolchain) into .tools/go.
GO_WANT=$(awk '/^go /{print $2; exit}' prototypes/reference/go.mod)
go_ok() {
  local have
  have=$("$1" env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
  [[ -n $have ]] && [[ $(printf '%s\n%s\n' "$GO_WANT" "$have" | sort -V | head -1) == "$GO_WANT" ]]
}
if [[ $MODE != nix && -x .tools/go/bin/go ]] && go_ok .tools/go/bin/go; then
  GO=$PWD/.tools/go/bin/go
elif command -v go >/dev/null && go_ok "$(command -v go)"; then
  GO=$(command -v go)
elif [[ $MODE == nix ]]; then
  log "error: the nix shell's Go ($(go env GOVERSION 2>/dev/null || echo none)) is older than go.mod's $GO_WANT; update the flake's nixpkgs pin"
  exit 1
else
  proxy=${GOPROXY:-https://proxy.golang.org}
  proxy=${proxy%%,*}
  # Go's names for the machine (dpkg may be absent without apt).
  case $(uname -m) in x86_64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  zip="v0.0.1-go${GO_WANT}.linux-${arch}.zip"
  log "fetching Go ${GO_WANT} from ${proxy}/golang.org/toolchain/@v/${zip}"
  step_start
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL --retry 3 -o "$tmp/go.zip" "${proxy}/golang.org/toolchain/@v/${zip}"
  unzip -q "$tmp/go.zip" -d "$tmp/x"
  rm -rf .tools/go
  mkdir -p .tools
  mv "$tmp/x/golang.org/toolchain@v0.0.1-go${GO_WANT}.linux-${arch}" .tools/go
  # Module zips do not keep file modes.
  chmod +x .tools/go/bin/* .tools/go/pkg/tool/*/*
  GO=$PWD/.tools/go/bin/go
  step_done go_s && installed=1
fi
step_start
for module in prototypes/reference workflow/harness/netemu; do
  # A vendor directory (`go mod vendor` on a connected machine, copied over) needs no download:
  # the way to build offline.
  if [[ -f $module/go.mod && ! -f $module/vendor/modules.txt ]]; then
    (cd "$module" && GOTOOLCHAIN=local "$GO" mod download)
  fi
done
step_done go_modules_s

# -- Python environment --------------------------------------------------------------------
if [[ ! -x .venv/bin/python ]] || ! cat requirements.txt requirements-nodeps.txt | cmp -s - .venv/.netstick-requirements; then
  log "creating the Python environment in .venv (requirements.txt, requirements-nodeps.txt)"
  step_start
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt >&2
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt >&2
  # No build isolation: the build backend is the pinned setuptools from requirements.txt.
  .venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . >&2
  cat requirements.txt requirements-nodeps.txt > .venv/.netstick-requirements
  step_done venv_s && installed=1
fi

# -- Snakemake profiles --------------------------------------------------------------------
# `snakemake --profile das6` looks the name up in the working directory, then in
# $XDG_CONFIG_HOME/snakemake (not next to the Snakefile): link this checkout's profile there.
# A link to another checkout is replaced (the newest setup wins); a real directory is kept.
profiles=${XDG_CONFIG_HOME:-$HOME/.config}/snakemake
mkdir -p "$profiles"
for name in das6; do
  target=$PWD/profiles/$name
  link=$profiles/$name
  if [[ -L $link || ! -e $link ]]; then
    [[ $(readlink "$link" 2>/dev/null) == "$target" ]] || { ln -sfn "$target" "$link"; log "profile $name -> $target"; }
  else
    log "warning: $link exists and is not a link; \`--profile $name\` uses it, not $target"
  fi
done
if ((installed)); then
  (IFS=,; printf '{"steps": {%s}, "finished_unix_s": %s}\n' "${steps[*]}" "$(date +%s)") >.venv/netstick-setup.json
fi
if [[ $installed == 1 || $MODE != apt ]]; then
  log "ready for $FOR (mode $MODE, $(. .tools/netstick-build.env; [[ $CGO_ENABLED == 1 ]] && echo "with" || echo "WITHOUT") the enet transport)"
fi

#!/usr/bin/env bash
# Installs what Netstick needs on a Debian-like machine — only what is missing, so it is
# cheap to run before every make target. Sources: Debian's apt, the Go module proxy (which
# also serves Go toolchains) and PyPI. Nothing else is contacted.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "netstick setup: $*" >&2; }
# Seconds of each step, written to .venv/netstick-setup.json when something was installed (the
# artifact's "time to prepare", report/artifact.py).
steps=() installed=0 t_step=0
step_start() { t_step=$(date +%s.%N); }
step_done() { steps+=("\"$1\": $(awk -v a="$t_step" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')"); }

# -- Debian packages -----------------------------------------------------------------------
APT_PACKAGES=(libenet-dev pkg-config gcc libc6-dev python3 python3-venv ca-certificates curl unzip procps iproute2 ethtool slurm-wlm munge slurmdbd mariadb-server r-base-core r-cran-ggplot2 r-cran-knitr r-cran-rmarkdown r-cran-data.table r-cran-jsonlite chromium poppler-utils)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
    exit 1
  fi
  log "installing Debian packages: ${missing[*]}"
  step_start
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
  step_done apt_s && installed=1
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
if [[ -x .tools/go/bin/go ]] && go_ok .tools/go/bin/go; then
  GO=$PWD/.tools/go/bin/go
elif command -v go >/dev/null && go_ok "$(command -v go)"; then
  GO=$(command -v go)
else
  proxy=${GOPROXY:-https://proxy.golang.org}
  proxy=${proxy%%,*}
  arch=$(dpkg --print-architecture)
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
  [[ -f $module/go.mod ]] && (cd "$module" && GOTOOLCHAIN=local "$GO" mod download)
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

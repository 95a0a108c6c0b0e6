#!/usr/bin/env bash
# Downloads the Unity prototype builds of a build-prototypes.yml run (GameCI in GitHub Actions)
# into the layout the manifests name:
#   artifact netstick-<lib>-<track>-<role>  ->  prototypes/unity/<lib>/Builds/<track>/<role>/
# with the player's executable bit restored (artifacts do not keep file modes). Idempotent: a
# role's directory is replaced as a whole by the run's files, so running it twice leaves the
# same tree and no file of an older build.
#
# Usage: workflow/tools/fetch-unity-builds.sh [--run ID | --latest | --from DIR]
#                     [--track TRACK]... [--repo OWNER/NAME] [--dest DIR] [LIB...]
#   --run ID      the run's id (the number in .../actions/runs/ID)
#   --latest      the latest successful run on main (the default)
#   --from DIR    artifacts already downloaded, one directory each (actions/download-artifact
#                 with a pattern): only unpacked, no gh needed
#   --track T     only this track (current, thesis); repeatable; default: every track
#   --repo R      the GitHub repository (default: gh's, from the checkout's remote)
#   --dest DIR    where the projects are (default: prototypes/unity of this checkout)
#   LIB...        only these projects (mirror, fishnet, ngo, nfe); default: every one in the run
# Needs the GitHub CLI `gh` (except with --from), logged in (`gh auth login`) or with GH_TOKEN.
set -euo pipefail

WORKFLOW=build-prototypes.yml
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEST=$ROOT/prototypes/unity
RUN=
LATEST=0
FROM=
REPO=
TRACKS=()
LIBS=()

usage() {
    sed -n '/^# Usage:/,/^# Needs/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
}

die() {
    echo "fetch-unity-builds.sh: $*" >&2
    exit 2
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --run)
            [[ $# -ge 2 && -n $2 ]] || die "--run needs a run id (the number in .../actions/runs/ID)"
            [[ $2 =~ ^[0-9]+$ ]] || die "--run: expected a numeric run id, found '$2'"
            RUN=$2
            shift 2
            ;;
        --latest)
            LATEST=1
            shift
            ;;
        --from)
            [[ $# -ge 2 && -d $2 ]] || die "--from needs a directory of downloaded artifacts"
            FROM=$(cd "$2" && pwd)
            shift 2
            ;;
        --track)
            [[ $# -ge 2 && -n $2 ]] || die "--track needs a track name (current or thesis)"
            [[ $2 =~ ^[a-z0-9][a-z0-9._-]*$ ]] || die "--track: expected a track name such as current or thesis, found '$2'"
            TRACKS+=("$2")
            shift 2
            ;;
        --repo)
            [[ $# -ge 2 && $2 == */* ]] || die "--repo needs OWNER/NAME"
            REPO=$2
            shift 2
            ;;
        --dest)
            [[ $# -ge 2 && -d $2 ]] || die "--dest needs an existing directory"
            DEST=$(cd "$2" && pwd)
            shift 2
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        -*)
            usage
            die "unknown option '$1'"
            ;;
        *)
            [[ $1 =~ ^[a-z0-9]+$ ]] || die "expected a project name (mirror, fishnet, ngo, nfe), found '$1'"
            [[ -d $DEST/$1 ]] || die "no Unity project $DEST/$1 (projects: $(cd "$DEST" && ls -d -- */ 2>/dev/null | tr -d / | tr '\n' ' '))"
            LIBS+=("$1")
            shift
            ;;
    esac
done
sources=$((${#RUN} > 0 ? 1 : 0))
sources=$((sources + LATEST + (${#FROM} > 0 ? 1 : 0)))
[[ $sources -le 1 ]] || die "--run, --latest and --from exclude each other"

if [[ -n $FROM ]]; then
    ARTIFACTS=$FROM
    SOURCE="in $FROM"
else
    command -v gh >/dev/null 2>&1 || die "the GitHub CLI 'gh' is not on PATH; install it \
(Debian/Ubuntu: apt-get install gh; elsewhere: https://cli.github.com), log in with \
'gh auth login' (or set GH_TOKEN), then run this again"
    repo_args=()
    [[ -n $REPO ]] && repo_args=(--repo "$REPO")
    if [[ -z $RUN ]]; then
        # The conclusion is filtered here, not with --status: Debian 12's gh (2.23) may lack it.
        RUN=$(gh run list "${repo_args[@]}" --workflow "$WORKFLOW" --branch main --limit 50 \
            --json databaseId,conclusion \
            --jq 'map(select(.conclusion == "success"))[0].databaseId // empty') \
            || die "cannot list the runs of $WORKFLOW (gh run list failed; logged in? gh auth status)"
        [[ -n $RUN ]] || die "no successful run of $WORKFLOW on main; start one (Actions tab, \
or: gh workflow run $WORKFLOW) or name a run with --run ID"
    fi
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/netstick-unity-builds.XXXXXX")
    trap 'rm -rf -- "$tmp"' EXIT
    ARTIFACTS=$tmp/dl
    SOURCE="of run $RUN of $WORKFLOW"
    gh run download "$RUN" "${repo_args[@]}" --pattern 'netstick-*' --dir "$ARTIFACTS" \
        || die "cannot download the artifacts of run $RUN (gh run download failed; artifacts \
are kept 90 days at most: start a new run)"
fi

wanted() { # wanted VALUE LIST...: true when the list is empty or holds VALUE
    local value=$1
    shift
    [[ $# -eq 0 ]] && return 0
    local x
    for x in "$@"; do [[ $x == "$value" ]] && return 0; done
    return 1
}

got=0
shopt -s nullglob
for dir in "$ARTIFACTS"/netstick-*/; do
    name=$(basename "$dir")
    if [[ ! $name =~ ^netstick-([a-z0-9]+)-([a-z0-9][a-z0-9._-]*)-(server|client)$ ]]; then
        echo "skipped artifact $name: not netstick-<lib>-<track>-<server|client>" >&2
        continue
    fi
    lib=${BASH_REMATCH[1]} track=${BASH_REMATCH[2]} role=${BASH_REMATCH[3]}
    wanted "$lib" "${LIBS[@]}" || continue
    wanted "$track" "${TRACKS[@]}" || continue
    if [[ ! -d $DEST/$lib ]]; then
        echo "skipped artifact $name: no Unity project $DEST/$lib" >&2
        continue
    fi
    program=$dir/netstick-$lib
    [[ -f $program ]] || die "artifact $name $SOURCE has no program netstick-$lib (files: \
$(cd "$dir" && ls | tr '\n' ' '))"
    target=$DEST/$lib/Builds/$track/$role
    mkdir -p "$(dirname "$target")"
    # Replace the role's directory as a whole: the new tree beside it, then swapped in.
    rm -rf -- "$target.new" "$target.old"
    cp -R -- "$dir" "$target.new"
    chmod +x -- "$target.new/netstick-$lib"
    [[ -e $target ]] && mv -- "$target" "$target.old"
    mv -- "$target.new" "$target"
    rm -rf -- "$target.old"
    sha=$(sha256sum "$target/netstick-$lib" | cut -d' ' -f1)
    files=$(find "$target" -type f | wc -l)
    echo "${target#"$ROOT"/}/netstick-$lib  ($files files, sha256 $sha)"
    got=$((got + 1))
done

if [[ $got == 0 ]]; then
    have=$(cd "$ARTIFACTS" 2>/dev/null && ls | tr '\n' ' ')
    die "no artifact $SOURCE is a netstick-<lib>-<track>-<role> for \
${LIBS[*]:-every project}${TRACKS:+ (tracks ${TRACKS[*]})}; its artifacts: ${have:-none}"
fi
echo "$got build(s) $SOURCE"

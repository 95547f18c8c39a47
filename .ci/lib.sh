# SPDX-License-Identifier: MIT
# .ci/lib.sh - what the CI stage scripts share, sourced by each: running a
# command as root (directly, or through sudo) and installing the Debian
# packages a stage needs when they are missing.

# as_root CMD...: CMD as root; fails naming the script and CMD without
# root or sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "$(basename "$0"): need root (or sudo) to run: $*" >&2
        exit 1
    fi
}

# apt_install PKG...: install the packages non-interactively, after
# updating the package lists; nothing without arguments.
apt_install() {
    [ $# -gt 0 ] || return 0
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

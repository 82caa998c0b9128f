#!/usr/bin/env bash
# Builds the minimal Debian root filesystem the role image starts from when no
# container registry is reachable, and writes it as a tarball for `docker import`.
#
#   deploy/build-base.sh OUT_TARBALL [SUITE [MIRROR]]
#   deploy/build-base.sh --print-source      prints "MIRROR SUITE" and exits
#
# SUITE and MIRROR default to the main Debian archive of this machine's apt
# configuration (deb822 files under $APT_ETC/sources.list.d/, then
# $APT_ETC/sources.list; APT_ETC defaults to /etc/apt); no mirror host is
# hard-coded. `roundtable image build --offline` (supervisor/image.py) asks
# --print-source, then passes both explicitly and imports the tarball as
# roundtable-base:SUITE. Building needs root and debootstrap (deploy/host-deps.sh).
set -euo pipefail

usage() { echo "usage: $0 OUT_TARBALL [SUITE [MIRROR]] | --print-source" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 3 ] || usage
apt_etc=${APT_ETC:-/etc/apt}

# Prints "URI SUITE" for the first enabled deb source of the main archive:
# a suite without a -updates/-security/-backports suffix, with component main.
apt_main_source() {
  local f
  for f in "$apt_etc"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && enabled != "no" && comps ~ /(^| )main( |$)/) {
          n = split(suites, s, " ")
          for (i = 1; i <= n; i++) if (s[i] !~ /-/) { split(uris, u, " "); print u[1], s[i]; exit }
        }
        types = uris = suites = comps = ""; enabled = "yes"
      }
      BEGIN { enabled = "yes" }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
        if (key == "types") types = $0; else if (key == "uris") uris = $0
        else if (key == "suites") suites = $0; else if (key == "components") comps = $0
        else if (key == "enabled") enabled = tolower($0) }
      END { flush() }
    ' "$f" | head -n1 | grep . && return 0
  done
  if [ -f "$apt_etc"/sources.list ]; then
    sed -e 's/\[[^]]*\]//' "$apt_etc"/sources.list |
      awk '$1 == "deb" && $3 !~ /-/ { for (i = 4; i <= NF; i++) if ($i == "main") { print $2, $3; exit } }' |
      grep . && return 0
  fi
  return 1
}

if [ "$1" = --print-source ]; then
  [ $# -eq 1 ] || usage
  apt_main_source || { echo "no Debian main archive (deb, component main) in $apt_etc" >&2; exit 1; }
  exit 0
fi

out=$1
suite=${2:-}
mirror=${3:-}
if [ -z "$suite" ] || [ -z "$mirror" ]; then
  if ! found=$(apt_main_source); then
    echo "no Debian main archive found in $apt_etc; pass SUITE and MIRROR" >&2
    exit 1
  fi
  read -r found_mirror found_suite <<<"$found"
  suite=${suite:-$found_suite}
  mirror=${mirror:-$found_mirror}
fi

if [ "$(id -u)" -ne 0 ]; then echo "debootstrap needs root" >&2; exit 1; fi
PATH=$PATH:/usr/sbin:/sbin
command -v debootstrap >/dev/null || { echo "debootstrap missing: run deploy/host-deps.sh" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/roundtable-base.XXXXXX")
rootfs=$work/rootfs
cleanup() {
  # debootstrap mounts /proc (and sometimes /dev, /sys) inside the target; never
  # let rm walk into a mounted host filesystem.
  local m
  for m in $(awk -v r="$rootfs" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "base: debootstrap $suite from $mirror"
debootstrap --variant=minbase --include=python3 --components=main \
  "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  echo "debootstrap failed (full log above, last 30 lines)" >&2
  exit 1
}

echo "base: stripping docs, man pages, locales, apt lists and caches"
rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
  "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/lintian "$rootfs"/usr/share/linda \
  "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old "$rootfs"/debootstrap
find "$rootfs"/var/log -type f -delete
# Later `apt-get install` in derived images keeps the same exclusions.
cat >"$rootfs"/etc/dpkg/dpkg.cfg.d/roundtable-nodoc <<'EOF'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
# Docker bind-mounts these at run time; do not ship the host's copies.
rm -f "$rootfs"/etc/resolv.conf "$rootfs"/etc/hostname
: >"$rootfs"/etc/resolv.conf
: >"$rootfs"/etc/hostname
chmod 1777 "$rootfs"/tmp

echo "base: writing $out"
mkdir -p "$(dirname "$out")"
tar --numeric-owner --one-file-system -C "$rootfs" -cf "$out.partial" .
mv "$out.partial" "$out"

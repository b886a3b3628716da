# Sourced by the bench/* scripts: installs the Debian packages a benchmark
# needs when they are missing.

# need PROGRAM PACKAGE: installs PACKAGE with apt-get unless PROGRAM is on PATH
# or in /usr/sbin (outside a non-root PATH), or is itself an absolute path that
# exists. A fresh image may have no package lists: they are refreshed once and
# the install tried again.
need() {
  if [ -x "$1" ] || command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; then
    return 0
  fi
  echo "bench: installing $2 (for $1)" >&2
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get install -y -qq "$2" >&2 ||
    { "${sudo[@]}" apt-get update -qq >&2 && "${sudo[@]}" apt-get install -y -qq "$2" >&2; }
}

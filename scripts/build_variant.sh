# Sourced by the scripts of the tests' other builds (build_openmpi.sh, build_tsan.sh): configures DIR once with the
# given CMake arguments, builds what changed, shows the compiler's warnings. A failed step prints its log and exits.
# One build of DIR at a time: a second caller (a pytest-xdist worker of the same layer) waits for the first one's
# lock on DIR/.build.lock, then finds DIR up to date.
# Usage: build_variant NAME DIR CMAKE_ARGS...
build_variant() {
  local name=$1 dir=$2 lock
  shift 2
  mkdir -p "$dir"
  exec {lock}>"$dir/.build.lock"
  flock "$lock"
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S . -B "$dir" "$@" >"$dir/configure.log" 2>&1 ||
      { cat "$dir/configure.log"; echo "$name: configure failed" >&2; exit 1; }
  fi
  if ! cmake --build "$dir" -j2 >"$dir/build.log" 2>&1; then
    cat "$dir/build.log"; echo "$name: build failed" >&2; exit 1
  fi
  grep -E 'warning:' "$dir/build.log" || true
}

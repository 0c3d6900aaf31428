#!/usr/bin/env bash
# unit/embed/man-example: the example of carlo(3), extracted from the page as printed (groff),
# built with the page's own command line against a fresh `make install PREFIX=<tmp>` of this
# build (carlo.h and carlo.pc from there, through PKG_CONFIG_PATH) and run, so that the page,
# the installed files and the library cannot drift apart.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
name=unit/embed/man-example
fail() { echo "FAIL $name: $*"; exit 0; }
command -v groff >/dev/null || { echo "SKIP $name: groff is not installed"; exit 0; }
command -v pkg-config >/dev/null || { echo "SKIP $name: pkg-config is not installed"; exit 0; }
[ -f "$BUILD/libcarlo.a" ] || fail "no $BUILD/libcarlo.a: build first"

work=$(mktemp -d "${CARLO_TEST_TMP:-/tmp}/embed-example.XXXXXX")
trap 'rm -rf "$work"' EXIT

# the install, with this build's configuration: CUDA and MPI as its objects say (else the
# install would rebuild $BUILD without them, and `make MPI=1 test` would find no MPI in the
# tests after this one); for make sanitize's build the sanitizer flags, which carlo.pc then
# hands on to the host program
cuda=1
grep -q register_none "$BUILD/gen/obj.list" 2>/dev/null && cuda=0
mpi=0
grep -q 'src/mpi/mpi\.o' "$BUILD/gen/obj.list" 2>/dev/null && mpi=1
flags=()
[ -n "${CARLO_SANITIZE_FLAGS:-}" ] &&
    flags=(CFLAGS="-O1 -g $CARLO_SANITIZE_FLAGS" LDFLAGS="$CARLO_SANITIZE_FLAGS")
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory BUILD="$BUILD" CUDA=$cuda MPI=$mpi \
        "${flags[@]}" PREFIX="$work/prefix" install >"$work/install.log" 2>&1; then
    fail "make install failed: $(tail -n 5 "$work/install.log")"
fi
for f in include/carlo.h lib/libcarlo.a lib/pkgconfig/carlo.pc; do
    [ -f "$work/prefix/$f" ] || fail "make install did not install $f"
done

# the page as a reader sees it; the example is its EXAMPLE section's C program (from the
# first #include to the closing brace) and the command lines after it
groff -man -Tascii -P-cbou man/carlo.3 2>/dev/null | sed -n '/^EXAMPLE/,/^[A-Z]/p' |
    sed 's/^       //' >"$work/section.txt"
sed -n '/^#include/,/^}$/p' "$work/section.txt" >"$work/host.c"
sed -n '/^}$/,$p' "$work/section.txt" | grep -E '^(cc |\./)' >"$work/commands.sh"
grep -q 'int main' "$work/host.c" || fail "no C program in the EXAMPLE section of man/carlo.3"
grep -q '^cc ' "$work/commands.sh" || fail "no cc command line after the example in man/carlo.3"

out=$(cd "$work" && PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" bash -e commands.sh 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "the page's commands ($(tr '\n' ';' <"$work/commands.sh")) failed ($rc): $(tail -n 15 <<<"$out")"
grep -qE '^energy per spin -[0-9]+\.[0-9]{6}$' <<<"$out" || fail "unexpected output: $out"
echo "PASS $name"

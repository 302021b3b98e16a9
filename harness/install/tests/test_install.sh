#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_install: `make install DESTDIR=` lays out every command, man page, scenario, fixture and
# doc, and the installed pdkv runs from there; `make deb` builds a package dpkg can read and
# (as root) unpack into a throw-away root. Never installs into the real system.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BUILD=${BUILD:-build}
T=$(mktemp -d /tmp/pdkv-install-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

make --no-print-directory -s install BUILD="$BUILD" PREFIX=/usr DESTDIR="$T/dest" >"$T/install.log" 2>&1 ||
  { cat "$T/install.log"; fail "make install"; }
R=$T/dest/usr
# the Debian package (dpkg-buildpackage with harness/install/debian/, in a staging copy under
# $BUILD/debsrc) builds in the background while the installed tree is checked; the binaries it
# starts from are already up to date (make install just made them)
t0=$(date +%s)
make --no-print-directory -s deb BUILD="$BUILD" >"$T/deb.log" 2>&1 &
debpid=$!
trap '[ -z "$debpid" ] || kill $debpid 2>/dev/null; rm -rf "$T"' EXIT
cmds=$(cd "$BUILD/bin" && ls pdkv pdkv-*)
for c in $cmds; do
  [ -x "$R/bin/$c" ] || fail "$R/bin/$c missing or not executable"
  [ -s "$R/share/man/man1/$c.1" ] || fail "man page $c.1 missing"
  # a page man(1) can render, with the command's name and its --help options
  page=$(MANWIDTH=100 man -l "$R/share/man/man1/$c.1" 2>/dev/null || true)
  grep -q "^NAME" <<<"$page" || fail "$c.1 has no NAME section"
  grep -q -- "$c" <<<"$page" || fail "$c.1 does not name $c"
done
ok "$(wc -w <<<"$cmds") commands and man pages"
grep -q -- "--timeout" <(MANWIDTH=100 man -l "$R/share/man/man1/pdkv-run.1") ||
  fail "pdkv-run.1 lacks the --timeout option of pdkv run --help"
for f in share/pdkv/scenarios/01-1p1d-tcp-etcd.json share/pdkv/scenarios/README.md \
  share/pdkv/scenarios/fixtures/guide-1p1d/mooncake.json share/pdkv/fixtures/config/README.md \
  share/doc/pdkv/README.md; do
  [ -s "$R/$f" ] || fail "$R/$f missing"
done
n_src=$(git ls-files scenarios | wc -l)
n_inst=$(cd "$R/share/pdkv" && find scenarios -type f | wc -l)
[ "$n_src" = "$n_inst" ] || fail "scenarios: $n_src files in the tree, $n_inst installed"
ok "scenarios ($n_inst files), fixtures, docs"

# the installed commands on their own: no PDKV_BIN, no checkout scenarios
(unset PDKV_BIN PDKV_SCENARIOS; cd "$T" && "$R/bin/pdkv" --help) >"$T/help.out" ||
  fail "installed pdkv --help exited $?"
grep -q "run " "$T/help.out" || fail "installed pdkv --help does not list run"
(unset PDKV_BIN PDKV_SCENARIOS; cd "$T" && "$R/bin/pdkv" run --list) >"$T/list.out" 2>&1 ||
  { cat "$T/list.out"; fail "installed pdkv run --list"; }
grep -q "1p1d-tcp-etcd" "$T/list.out" || fail "installed pdkv run --list misses the default suite"
ok "installed pdkv --help, pdkv run --list finds share/pdkv/scenarios"

# man pages carry more than --help: EXIT STATUS, FILES, EXAMPLES, and ENVIRONMENT from pd_env
page=$(MANWIDTH=200 man -l "$R/share/man/man1/pdkv-run.1" 2>/dev/null)
for sec in "EXIT STATUS" FILES EXAMPLES ENVIRONMENT; do
  grep -q "^$sec" <<<"$page" || fail "pdkv-run.1 has no $sec section"
done
grep -q "PDKV_SCENARIOS" <<<"$page" || fail "pdkv-run.1's ENVIRONMENT lacks PDKV_SCENARIOS"
grep -q "OPENAI_API_KEY" <(MANWIDTH=200 man -l "$R/share/man/man1/pdkv-proxy.1") ||
  fail "pdkv-proxy.1's ENVIRONMENT lacks OPENAI_API_KEY"
ok "man pages: EXIT STATUS, FILES, EXAMPLES, ENVIRONMENT (from pdkv-doctor --env --man)"

# the Debian package (started above), then lintian
wait $debpid || { debpid=; cat "$T/deb.log"; fail "make deb"; }
debpid=
echo "make deb: $(($(date +%s) - t0)) s (in the background from the start)"
deb=$(ls "$BUILD"/pdkv_*.deb | head -1)
[ -s "$deb" ] || fail "no $BUILD/pdkv_*.deb"
ls "$BUILD"/pdkv-dbgsym_*.deb >/dev/null 2>&1 || fail "no -dbgsym package (binaries not stripped?)"
dpkg-deb -I "$deb" >"$T/info" || fail "dpkg-deb -I $deb"
grep -q "^ Package: pdkv$" "$T/info" || fail "control has no Package: pdkv"
grep -q "^ Maintainer: .*@" "$T/info" && ! grep -q "localhost" "$T/info" || fail "maintainer: $(grep Maintainer "$T/info")"
for dep in libc6 libcjson1 libcurl4 libmicrohttpd12 libhiredis0.14 libzmq5 libibverbs1; do
  grep "^ Depends:" "$T/info" | grep -q "$dep" || fail "Depends lacks $dep: $(grep Depends "$T/info")"
done
dpkg-deb -c "$deb" >"$T/contents" || fail "dpkg-deb -c"
for f in ./usr/bin/pdkv ./usr/bin/pdkv-run ./usr/share/man/man1/pdkv-run.1.gz \
  ./usr/share/pdkv/scenarios/01-1p1d-tcp-etcd.json ./usr/share/doc/pdkv/copyright \
  ./usr/share/doc/pdkv/changelog.Debian.gz; do
  grep -q " $f$" "$T/contents" || fail "package lacks $f"
done
grep -q "root/root" "$T/contents" || fail "package files not owned by root"
ok "$(basename "$deb"): $(grep '^ Depends:' "$T/info" | cut -c2-)"
if command -v lintian >/dev/null; then
  # errors and warnings fail; overrides (harness/install/debian/*.lintian-overrides) carry a reason
  lintian --fail-on error,warning "$deb" >"$T/lintian" 2>&1 || { cat "$T/lintian"; fail "lintian"; }
  ok "lintian: clean ($(grep -c . "$T/lintian") info lines)"
else
  echo "(lintian not installed: skipped)"
fi

if [ "$(id -u)" = 0 ]; then
  # unpack the way dpkg installs it, into a throw-away root with its own dpkg database
  X=$T/root
  mkdir -p "$X/var/lib/dpkg/info" "$X/var/lib/dpkg/updates"
  : >"$X/var/lib/dpkg/status"
  dpkg --root="$X" --force-depends --force-script-chrootless -i "$deb" >"$T/dpkg.log" 2>&1 ||
    { cat "$T/dpkg.log"; fail "dpkg --root -i"; }
  # (to files first: grep -q closing a pipe early would SIGPIPE the writer under pipefail)
  dpkg --root="$X" -L pdkv >"$T/files" 2>&1
  grep -q "^/usr/bin/pdkv-run$" "$T/files" || fail "dpkg -L pdkv lacks pdkv-run"
  (unset PDKV_BIN PDKV_SCENARIOS; "$X/usr/bin/pdkv" run --list) >"$T/list" 2>&1
  grep -q 1p1d-tcp-etcd "$T/list" || fail "pdkv from the package does not find its scenarios"
  ok "dpkg --root install into $X"
  if command -v apt-get >/dev/null; then
    # apt resolves the Depends against this system's packages (simulation: changes nothing)
    apt-get -s -o Debug::NoLocking=1 install "./$deb" >"$T/apt.log" 2>&1 ||
      { tail -5 "$T/apt.log"; fail "apt-get -s install ./$deb"; }
    ok "apt-get -s install ./$(basename "$deb") resolves"
  fi
else
  echo "(not root: skipped the dpkg --root install)"
fi
echo "test_install: PASS"

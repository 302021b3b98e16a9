#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Netns scenarios where namespaces can be added but not entered (issue 33): a real chroot whose /
# is no mount point, as in a chroot'ed CI job, where `ip netns exec` fails with "mount
# --make-rslave / failed". They are NOTRUN with that reason (exit 77), not FAIL, and leave no
# namespace behind. Needs root (a private mount namespace and bind mounts); SKIP otherwise.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=$(cd "${PDKV_BIN:-build/bin}" 2>/dev/null && pwd)
[ -x "$BIN/pdkv-run" ] || { echo "SKIP: pdkv-run not built"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for the chroot"; exit 77; }
command -v unshare >/dev/null && command -v chroot >/dev/null && command -v ip >/dev/null ||
	{ echo "SKIP: needs unshare, chroot and ip"; exit 77; }
T=$(mktemp -d /tmp/pdkv-nsnr.XXXXXX)
# the chroot's binds live only in its private mount namespace; still, only empty directories
# and links are removed from it (never a tree that might be a bound host directory)
cleanup() {
	for r in "$T"/root.*; do [ -d "$r" ] && find "$r" -depth \( -type l -o -type d -empty \) -delete; done
	ls -d "$T"/root.* >/dev/null 2>&1 || rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$T/out"; exit 1; }

# the chroot: a plain directory (no mount point) with the host's trees bound under it; the
# mount namespace is private, so the binds vanish with the command
cat >"$T/chroot.sh" <<'S'
set -e
R=$(mktemp -d "$NSNR_DIR/root.XXXXXX")
for d in usr bin sbin lib lib64 lib32 etc proc sys dev run tmp work home root opt; do
	[ -e "/$d" ] || continue
	if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$R/$d"; continue; fi
	mkdir -p "$R/$d"
	mount --rbind "/$d" "$R/$d"
done
case "$PWD" in /usr/* | /bin/* | /lib* | /etc/* | /tmp/* | /work/* | /home/* | /root/* | /opt/*) ;;
*) echo "SKIP: the checkout $PWD is outside the trees the chroot binds"; exit 77 ;;
esac
exec chroot "$R" /bin/bash -c 'cd "$0" && "$@"' "$PWD" "$@"
S
export NSNR_DIR=$T
unshare -m --propagation private bash "$T/chroot.sh" ip netns add "pdkv-$$.nsnr" >"$T/out" 2>&1
rc=$?
[ $rc = 77 ] && { cat "$T/out"; exit 77; }
ip netns del "pdkv-$$.nsnr" 2>/dev/null
[ $rc = 0 ] || { cat "$T/out"; echo "SKIP: cannot set up the chroot (rc $rc)"; exit 77; }

before=$(ls /run/netns 2>/dev/null | grep -c '^pdkv-')
unshare -m --propagation private bash "$T/chroot.sh" "$BIN/pdkv-run" --workdir "$T/w" \
	--json "$T/r.json" scenarios/30-netns-1p1d-v0.json scenarios/hostile/31-netns-link-cut.json \
	>"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc = 77 ] || fail "pdkv run exited $rc, want 77 (nothing could run)"
grep -q '^netns-1p1d-v0  *NOTRUN' "$T/out" || fail "netns-1p1d-v0 is not NOTRUN"
grep -q '^netns-link-cut  *NOTRUN' "$T/out" || fail "netns-link-cut is not NOTRUN"
grep -q 'notrun: hosts: .*mount --make-rslave' "$T/out" || fail "the reason does not name the failure"
grep -q ' 0 failed' "$T/out" || fail "a FAIL among them"
after=$(ls /run/netns 2>/dev/null | grep -c '^pdkv-')
[ "$after" -le "$before" ] || fail "namespaces left behind: $(ls /run/netns)"
echo "ok: netns scenarios NOTRUN in a chroot, with the reason"

#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-in-rxe-vm.sh 'command' — runs a shell command inside a throw-away qemu guest with Soft-RoCE
# (rdma_rxe) loaded and the host's / visible read-only over 9p, so host-built binaries (pdkv tests,
# ibv_devices, ib_write_bw, rping) run unchanged. pdkv's copy of the recipe in shared/rxe-vm/.
# stdout/stderr of the command -> this script's stdout; exit code = the command's exit code
# (255 = VM/harness failure, 124 = timeout).
#
# What it can do (measured on a 2-core host without usable KVM, i.e. TCG emulation):
#   - boot Debian's own kernel (linux-image-amd64's package, fetched with apt-get download and
#     extracted, never installed) in ~7-12 s; cold start (download + initramfs) adds ~10 s
#   - one rxe device (single: rxe0 on 10.77.0.1) or two that really cross a veth wire
#     (pair: rxe0@10.77.0.1 + rxe1@10.77.0.2, policy routing keeps traffic off lo)
#   - real verbs traffic: perftest, rping, host-built libibverbs programs; tens of MB/s under TCG
# What it cannot do:
#   - bandwidth numbers that mean anything for hardware (report ratios to ib_write_bw instead)
#   - per-namespace rxe (6.1 rxe works in init_net only): both "hosts" share one netns
#   - KVM on PVM hosts (kvm_pvm: stock kernels hang) -> TCG; real KVM hosts use -enable-kvm
#   - writes outside cwd, /tmp, /run, /root, /dev/shm (the host fs is read-only in the guest):
#     daemons need data dirs under /tmp; 9p can rarely lose a dentry: copy binaries to /dev/shm
#
# Environment knobs (all optional):
#   RXEVM_DIR=/tmp/rxevm        scratch dir for kernel, initramfs, job dirs
#   RXEVM_KPKG=linux-image-6.1.0-57-amd64   kernel package (default: what linux-image-amd64 depends on)
#   RXEVM_MEM=1024  RXEVM_SMP=<host nproc>   guest RAM (MiB) / vCPUs
#   RXEVM_KVM=auto|on|off       off = TCG (slow, for hosts without /dev/kvm)
#   RXEVM_TIMEOUT=900           seconds before the VM is killed (rc 124)
#   RXEVM_WORKDIR=$PWD          mounted read-write at the same path in the guest; cwd of the command
#   RXEVM_SETUP=single|pair|none  single: rxe0 on veth 10.77.0.1; pair: rxe0@10.77.0.1 + rxe1@10.77.0.2
#   RXEVM_PASSENV="A B"         host variables exported into the guest command's environment
#   RXEVM_PREPARE_ONLY=1        fetch the kernel and build the initramfs, then exit 0 (no boot)
#   RXEVM_KEEP=1                keep the job dir (console.log, timings) ; RXEVM_VERBOSE=1 chatty
#   RXEVM_TIMING=1              print a timing line to stderr
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RXEVM_DIR=${RXEVM_DIR:-/tmp/rxevm}
MEM=${RXEVM_MEM:-1024}
SMP=${RXEVM_SMP:-$(nproc)}
TIMEOUT=${RXEVM_TIMEOUT:-900}
KVM=${RXEVM_KVM:-auto}
WORKDIR=${RXEVM_WORKDIR:-$PWD}
log() { [ -z "${RXEVM_VERBOSE:-}" ] || echo "[rxevm] $*" >&2; }
die() { echo "[rxevm] ERROR: $*" >&2; exit 255; }
[ $# -ge 1 ] || die "usage: $0 'command to run in guest'"
T0=$(date +%s.%N)

# ---- 1. host tools -------------------------------------------------------------
need_pkgs=()
command -v qemu-system-x86_64 >/dev/null || need_pkgs+=(qemu-system-x86)
{ [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || need_pkgs+=(busybox-static)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2 \
    || die "apt-get install ${need_pkgs[*]} failed"
fi

# ---- 2. guest kernel (Debian package, extracted, never installed) -----------------
mkdir -p "$RXEVM_DIR"
KPKG=${RXEVM_KPKG:-}
if [ -z "$KPKG" ]; then
  KPKG=$(cat "$RXEVM_DIR/default-kpkg" 2>/dev/null || true)
  if [ -z "$KPKG" ]; then
    KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
    [ -n "$KPKG" ] || die "cannot resolve linux-image-amd64 (apt-get update?)"
    echo "$KPKG" > "$RXEVM_DIR/default-kpkg"
  fi
fi
KVER=${KPKG#linux-image-}
KDIR=$RXEVM_DIR/$KVER
exec 9>"$RXEVM_DIR/.lock"; flock 9      # serialize kernel/initramfs preparation
if [ ! -f "$KDIR/.extracted" ]; then
  log "fetching $KPKG"
  rm -rf "$KDIR"; mkdir -p "$KDIR"
  ( cd "$KDIR" && apt-get download "$KPKG" >/dev/null 2>&1 ) || die "apt-get download $KPKG failed"
  dpkg -x "$KDIR"/*.deb "$KDIR/root" && rm -f "$KDIR"/*.deb
  busybox depmod -b "$KDIR/root" "$KVER" || die "depmod failed"
  touch "$KDIR/.extracted"
fi
VMLINUZ=$KDIR/root/boot/vmlinuz-$KVER
MODDIR=$KDIR/root/lib/modules/$KVER

# ---- 3. initramfs: static busybox + virtio/9p modules + guest-init.sh -------------
INITRD=$KDIR/initramfs.cpio.gz
if [ ! -f "$INITRD" ] || [ "$HERE/guest-init.sh" -nt "$INITRD" ] || [ "$0" -nt "$INITRD" ]; then
  log "building initramfs"
  ib=$(mktemp -d "$RXEVM_DIR/initramfs.XXXXXX")
  mkdir -p "$ib"/{bin,sbin,proc,sys,dev,host,tmp,lib/modules/$KVER}
  cp /bin/busybox "$ib/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$ib/bin/$a"; done
  ln -sf ../bin/busybox "$ib/sbin/modprobe"     # kernel request_module() helper path
  # copy the boot-time modules and everything they depend on (per modules.dep)
  want="virtio_pci 9pnet_virtio 9p virtio_console"
  files=$(for m in $want; do
            awk -v m="$m" -F': *' '{n=$1; sub(/.*\//,"",n); sub(/\.ko.*$/,"",n); gsub(/-/,"_",n);
                 if (n==m) {print $1; if ($2!="") print $2}}' "$MODDIR/modules.dep" | tr ' ' '\n'
          done | sort -u)
  for f in $files; do mkdir -p "$ib/lib/modules/$KVER/$(dirname "$f")"; cp "$MODDIR/$f" "$ib/lib/modules/$KVER/$f"; done
  cp "$MODDIR"/modules.{dep,alias,builtin,order} "$ib/lib/modules/$KVER/" 2>/dev/null || true
  cp "$HERE/guest-init.sh" "$ib/init"; chmod 755 "$ib/init"
  ( cd "$ib" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 ) > "$INITRD.tmp" && mv "$INITRD.tmp" "$INITRD"
  rm -rf "$ib"
fi
flock -u 9
[ -n "${RXEVM_PREPARE_ONLY:-}" ] && exit 0

# ---- 4. job dir ------------------------------------------------------------------
mkdir -p "$RXEVM_DIR/jobs"
JOB=$(mktemp -d "$RXEVM_DIR/jobs/job.XXXXXX")
cleanup() { [ -n "${RXEVM_KEEP:-}" ] || rm -rf "$JOB"; }
trap cleanup EXIT
printf '%s\n' "$1" > "$JOB/cmd.sh"
cp "$HERE/guest-job.sh" "$HERE/rxe-pair-setup.sh" "$JOB/" 2>/dev/null || cp "$HERE/guest-job.sh" "$JOB/"
[ "$WORKDIR" = / ] && WORKDIR=""
echo "${WORKDIR:-/}" > "$JOB/workdir"
# pass RXEVM_* and a few user-chosen variables (RXEVM_PASSENV="A B") into the guest
{ for v in $(compgen -e | grep '^RXEVM_' || true) ${RXEVM_PASSENV:-}; do printf 'export %s=%q\n' "$v" "${!v-}"; done; } > "$JOB/env"

# ---- 5. boot --------------------------------------------------------------------
# auto: KVM only if /dev/kvm is a hardware KVM. A PVM host (kvm_pvm module, "pagetable-based
# virtual machine", e.g. Firecracker sandboxes with nested_pvm=1) exposes /dev/kvm but can only
# run PVM-enlightened guest kernels; a stock Debian kernel hangs right after the setup code.
accel=tcg; cpu=max
if [ "$KVM" = on ] || { [ "$KVM" = auto ] && [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; }; then
  [ -w /dev/kvm ] || die "RXEVM_KVM=on but /dev/kvm is not usable"
  accel=kvm; cpu=host
fi
echo "export RXEVM_ACCEL=$accel" >> "$JOB/env" # the guest's judges know emulation from KVM
qargs=(-nodefaults -no-user-config -display none -no-reboot
  -machine q35,accel=$accel -cpu $cpu -smp "$SMP" -m "$MEM"
  -kernel "$VMLINUZ" -initrd "$INITRD"
  -append "console=ttyS0 quiet loglevel=3 panic=-1 rxevm.job=$JOB rxevm.kmod=$KDIR/root/lib/modules ${RXEVM_APPEND:-}"
  -serial "file:$JOB/console.log"
  -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=$JOB,mount_tag=jobdir,security_model=none"
  -device virtio-serial-pci -chardev file,id=out,path=/dev/stdout,append=on -device virtserialport,chardev=out,name=out
  -nic none)
[ -n "$WORKDIR" ] && qargs+=(-virtfs "local,path=$WORKDIR,mount_tag=workdir,security_model=none,multidevs=remap")
# shellcheck disable=SC2206
[ -n "${RXEVM_QEMU_EXTRA:-}" ] && qargs+=($RXEVM_QEMU_EXTRA)
log "qemu accel=$accel smp=$SMP mem=${MEM}M job=$JOB"
T1=$(date +%s.%N)
set +e
# qemu writes the guest's output port to /dev/stdout; pipe through cat so that it is a
# pipe (re-opening a regular-file stdout would clobber offsets)
timeout --foreground -k 5 "$TIMEOUT" qemu-system-x86_64 "${qargs[@]}" < /dev/null | cat
qrc=${PIPESTATUS[0]}
set -e
T2=$(date +%s.%N)

if [ -f "$JOB/rc" ]; then rc=$(cat "$JOB/rc")
elif [ $qrc = 124 ]; then echo "[rxevm] timeout after ${TIMEOUT}s" >&2; rc=124
else rc=255; fi
if [ ! -f "$JOB/rc" ]; then
  echo "[rxevm] guest did not report an exit code (qemu rc=$qrc); console tail:" >&2
  tail -n 30 "$JOB/console.log" >&2 || true
fi
if [ -n "${RXEVM_TIMING:-}" ]; then
  cs=$(cat "$JOB/t_cmd_start" 2>/dev/null || echo 0); ce=$(cat "$JOB/t_cmd_end" 2>/dev/null || echo 0)
  awk -v t0="$T0" -v t1="$T1" -v t2="$T2" -v cs="$cs" -v ce="$ce" -v acc="$accel" 'BEGIN{
    printf "[rxevm] timing accel=%s prep=%.2fs qemu_to_cmd=%.2fs cmd=%.2fs shutdown=%.2fs total=%.2fs\n",
      acc, t1-t0, (cs>0?cs-t1:-1), (cs>0?ce-cs:-1), (ce>0?t2-ce:-1), t2-t0}' >&2
fi
exit "$rc"

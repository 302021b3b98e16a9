# SPDX-License-Identifier: Apache-2.0
# remote-target.sh — sourced by rdma-accept.sh two-host: the `pdkv bench` target started on a
# hosts.txt machine through ssh with pdkv run's launcher options (harness/lib/hr_ssh*.c), its
# ready file polled, its log fetched back and its process group stopped (remote_cleanup).
# Uses HOSTS THOST SSHKEY DRY PROTO TDEVS TIP BUF SIZES PFLAGS T; sets seg and TIP.
# shellcheck shell=bash

RDEST='' RPDKV=pdkv RPID='' RDIR='' RCTL='' SSHO=() RENV=()

# hosts.txt line of THOST -> RDEST, RPDKV, RENV, ssh port (pdkv run --hosts' format)
remote_host() {
	local line f kv
	[ -r "$HOSTS" ] || { echo "rdma-accept: --hosts: cannot read $HOSTS" >&2; return 2; }
	line=$(awk -v n="$THOST" '{ sub(/#.*/, "") } $1 == n { print; exit }' "$HOSTS")
	[ -n "$line" ] || { echo "rdma-accept: --target_host: \"$THOST\" is not in $HOSTS" >&2; return 2; }
	read -r -a f <<<"$line"
	RDEST=${f[1]:-}
	case ${RDEST#*@} in
	'' | -*) echo "rdma-accept: $HOSTS: host $THOST: expected NAME [USER@]ADDRESS" >&2; return 2 ;;
	esac
	for kv in "${f[@]:2}"; do
		case $kv in
		port=*) SSHO+=(-o "Port=${kv#*=}") ;;
		pdkv=*) RPDKV=${kv#*=} ;;
		*=*) RENV+=("$kv") ;;
		*) echo "rdma-accept: $HOSTS: \"$kv\": expected KEY=VALUE" >&2; return 2 ;;
		esac
	done
	TIP=${TIP:-${RDEST#*@}}
}

rsh() { # rsh COMMAND-LINE: run it on the target host (printed only, with --dry-run)
	if [ -n "$DRY" ]; then
		printf '+ ssh %s: %s\n' "$RDEST" "$1"
		return 0
	fi
	ssh "${SSHO[@]}" -- "$RDEST" "$1"
}

remote_start_target() {
	local out cmd i
	[ -n "$HOSTS" ] && [ -n "$THOST" ] && [ -n "$TDEVS" ] || {
		echo "rdma-accept: two-host needs --hosts, --target_host and --target_devices" >&2
		return 2
	}
	remote_host || return 2
	RCTL=$(mktemp -d /tmp/pdkv-cm.XXXXXX)
	SSHO+=(-o BatchMode=yes -o ConnectTimeout=10 -o ControlMaster=auto -o "ControlPath=$RCTL/m"
		-o ControlPersist=300 -o StrictHostKeyChecking=accept-new
		-o "UserKnownHostsFile=$T/known_hosts ${HOME:-/nonexistent}/.ssh/known_hosts"
		-o ServerAliveInterval=5 -o ServerAliveCountMax=2 -o LogLevel=ERROR)
	[ -n "$SSHKEY" ] && SSHO+=(-i "$SSHKEY" -o IdentitiesOnly=yes)
	RDIR=/tmp/pdkv-accept-remote.$$
	# shellcheck disable=SC2086
	cmd=$(printf ' %q' env "${RENV[@]}" MC_TCP_BIND_ADDRESS="$TIP" "$RPDKV" bench --mode=target \
		--metadata_server=P2PHANDSHAKE --protocol="$PROTO" --device_name="$TDEVS" \
		${BUF:+--buffer_size="$BUF"} --ready_file="$RDIR/ready" $SIZES "${PFLAGS[@]}")
	out=$(rsh "command -v $(printf '%q' "$RPDKV") >/dev/null || { echo 'pdkv-missing'; exit 0; };
		mkdir -p $RDIR && cd $RDIR && { setsid nohup$cmd >target.log 2>&1 </dev/null & } && echo pdkv-pid=\$!")
	case $? in 0) ;; *)
		echo "rdma-accept: host $THOST ($RDEST): cannot reach it through ssh" >&2; return 1 ;;
	esac
	[ -n "$DRY" ] && { seg=SEGMENT-PRINTED-BY-THE-TARGET; echo "$out"; return 0; }
	case $out in *pdkv-missing*)
		echo "rdma-accept: host $THOST: pdkv is not installed there (no \"$RPDKV\"; pdkv=PATH in $HOSTS)" >&2
		return 1 ;;
	esac
	RPID=${out##*pdkv-pid=}
	for i in $(seq 300); do
		seg=$(rsh "cat $RDIR/ready 2>/dev/null | head -1")
		[ -n "$seg" ] && break
		[ $((i % 10)) = 0 ] && ! rsh "kill -0 $RPID 2>/dev/null" && break
		sleep 0.1
	done
	if [ -z "$seg" ]; then
		rsh "tail -20 $RDIR/target.log"
		echo "rdma-accept: the target on $THOST did not start" >&2
		return 1
	fi
	echo "rdma-accept: target on $THOST ($TIP, $TDEVS): --segment=$seg"
}

remote_cleanup() {
	[ -n "$RCTL" ] || return 0
	if [ -n "$RPID" ]; then
		rsh "kill -TERM -- -$RPID 2>/dev/null; for i in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 $RPID 2>/dev/null || break; sleep 0.2; done; kill -KILL -- -$RPID 2>/dev/null; true"
		rsh "cat $RDIR/target.log" >"$T/target.log" 2>/dev/null
		# the target's log, kept where the caller asks (the tests look at it)
		[ -n "${PDKV_ACCEPT_TARGET_LOG:-}" ] && cp "$T/target.log" "$PDKV_ACCEPT_TARGET_LOG"
	fi
	[ -n "$RDIR" ] && [ -z "$DRY" ] && rsh "rm -rf $RDIR"
	[ -z "$DRY" ] && ssh -o "ControlPath=$RCTL/m" -O exit "$RDEST" >/dev/null 2>&1
	rm -rf "$RCTL"
	RCTL=
}

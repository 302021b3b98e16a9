# SPDX-License-Identifier: Apache-2.0
# ci/testlib.sh: what pdkv's bash tests share (sourced, never run): ok/bad/check counting into
# $fails, a temp dir with one background server or a list of them, reading a server's port from
# its log, free port blocks, and the slow-connection flood of the hostile-client tests.
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# tl_one_server: TMP (removed on exit) and PID (the one server, killed on exit)
tl_one_server() {
	TMP=$(mktemp -d)
	PID=
	trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
}

# tl_log_port LOG [TRIES] [health]: the port of the "listening on [http://]HOST:PORT" line in LOG,
# polled every 50 ms; with "health", also until GET /health answers. Empty if it never came.
tl_log_port() {
	local log=$1 tries=${2:-200} health=${3:-} port=
	for _ in $(seq "$tries"); do
		port=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$log" | head -1)
		if [ -n "$port" ]; then
			[ -z "$health" ] && break
			curl -sf -o /dev/null "http://127.0.0.1:$port/health" && break
		fi
		sleep 0.05
	done
	echo "$port"
}

# tl_start WHAT CMD...: starts the one server (CMD, logging to $TMP/log) and sets PID and PORT;
# exits the test when it does not come up. tl_stop: kills it.
tl_start() {
	local what=$1
	shift
	"$@" >"$TMP/log" 2>&1 &
	PID=$!
	PORT=$(tl_log_port "$TMP/log")
	[ -n "$PORT" ] || { cat "$TMP/log"; echo "FAIL $what did not start"; exit 1; }
}
tl_stop() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=; }

# tl_procs PREFIX: T (a temp dir /tmp/PREFIX.XXXXXX) and PIDS (background processes the test
# appends); on exit every PID gets SIGTERM, 0.3 s later SIGKILL, and T is removed.
tl_procs() {
	T=$(mktemp -d "/tmp/$1.XXXXXX")
	PIDS=()
	trap tl_procs_end EXIT
}
tl_procs_end() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}

# tl_free_base: a base port B whose V0 pipe ports (B, B+9, B+10 and the +100 decode side) are all
# free now, below Linux's ephemeral range (32768+) so client sockets never take them meanwhile.
tl_free_base() {
	local b
	for _ in $(seq 50); do
		b=$((20000 + (RANDOM % 1100) * 10))
		ss -Htln 2>/dev/null | awk '{print $4}' | grep -qE ":($b|$((b + 9))|$((b + 10))|$((b + 100))|$((b + 109))|$((b + 110)))\$" || { echo $b; return; }
	done
	echo 23003
}

# tl_flood N PORT: opens N connections from 127.0.0.1, each sending half a request line; fds in
# FLOOD[]. tl_closed_count: how many of them the server closed (EOF within 0.2 s).
FLOOD=()
tl_flood() {
	local fd
	for _ in $(seq "$1"); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$2" || {
			# say why: was the server still there, and what did it last log?
			echo "  (flood: connect to $2 failed; server pid ${PID:-?}" \
				"$(kill -0 "${PID:-none}" 2>/dev/null && echo alive || echo gone);" \
				"its log: $(tail -3 "$TMP/log" 2>/dev/null | tr '\n' ' '))"
			break
		}
		printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le' >&$fd 2>/dev/null
		FLOOD+=("$fd")
	done
}
tl_closed_count() {
	local n=0 fd line
	for fd in "${FLOOD[@]}"; do
		read -r -t 0.2 -u "$fd" line 2>/dev/null
		[ $? -eq 1 ] && n=$((n + 1))
	done
	echo $n
}
tl_unflood() { local fd; for fd in "${FLOOD[@]}"; do exec {fd}>&-; done; FLOOD=(); }

# tl_promtool WHAT URL: `promtool check metrics` (Debian's prometheus package) on URL's /metrics.
# vLLM's own names carry a colon ("vllm:..."), which promtool's linter flags as a style point;
# that one lint is accepted for vllm: names (faithful to vLLM), anything else fails the check.
tl_promtool() {
	local what=$1 url=$2 out
	if ! command -v promtool >/dev/null; then
		bad "$what: promtool not installed (run ci/install-deps.sh)"
		return
	fi
	out=$(curl -sS -m 10 "$url" | promtool check metrics 2>&1 |
		grep -vE '^vllm:[a-zA-Z0-9_:]+ metric names should not contain .:.$')
	if [ -z "$out" ]; then ok "$what: promtool check metrics clean"; else
		bad "$what: promtool check metrics: $out"
	fi
}

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# handoff.py: measures the KV hand-off path of pdkv's stand-ins (V0 pipe: decode pulls with
# READ; V1 gen A and gen B: prefill pushes with WRITE) against a plain stand-in, one request at a
# time, and runs `pdkv-bench` with the same protocol right before and after each prompt length's
# hand-offs (the ratio is to the better of the two), so the hand-off/engine ratio is like for
# like. "ratio" counts the KV bytes only; "ratio (bytes moved)" all the bytes the hand-off moved
# (V0 also moves the hidden states, tokens and roi; for V1 the two are the same).
# V1 rows also give the streamed decode's TTFT (time to the first text chunk) next to a plain
# stand-in's, and the share of the decode request that was the prefill's WRITE itself. The last
# column splits the hand-off window into lead (before the KV moves), move and tail (after it).
# Requests go as each generation's router sends them: V0 and gen A the prefill, then the decode
# with what it answered (the hand-off holds that hop); gen B both at once. For gen B the decode
# request's time is the one sent after the prefill had answered (streamed), so it holds the
# hand-off and the first token, not the prefill's compute. Connections are kept alive.
import argparse, http.client, json, os, re, signal, socket, subprocess, sys, tempfile, threading, time, urllib.request, uuid

MODEL = "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"
ap = argparse.ArgumentParser()
ap.add_argument("--bin", default="build/bin")
ap.add_argument("--gens", default="v0,bn", help="v0, a (V1 gen A), bn (V1 gen B)")
ap.add_argument("--tokens", default="1000,4000,16000,32000")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--ns-per-token", type=int, default=20000)
ap.add_argument("--engine-duration", default="2")
ap.add_argument("--engine-gap-ms", type=float, default=0,
                help="the engine idles this long between its batches (pdkv-bench --gap-ms), so each batch "
                     "is a one-shot transfer after a pause as a hand-off is; 0 (default): back to back")
ap.add_argument("--json")
a = ap.parse_args()
TMP = tempfile.mkdtemp(prefix="pdkv-handoff-")
procs = []
os.environ.update(MC_TCP_BIND_ADDRESS="127.0.0.1", VLLM_HOST_IP="127.0.0.1", PDKV_LOG="debug")
MAXLEN = max(int(t) for t in a.tokens.split(",")) + 64


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def start(name, args, env=None):
    log = open(f"{TMP}/{name}.log", "w")
    e = dict(os.environ, **(env or {}))
    p = subprocess.Popen([f"{a.bin}/pdkv-standin", "--model", MODEL, "--port", "0", "--host", "127.0.0.1",
                          "--max-model-len", str(MAXLEN), "--ns-per-token", str(a.ns_per_token)] + args,
                         stdout=log, stderr=subprocess.STDOUT, env=e)
    procs.append(p)
    for _ in range(400):
        m = re.search(r"listening on http://[^:]*:(\d+)", open(f"{TMP}/{name}.log").read())
        if m:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/health", timeout=2)
                return int(m.group(1))
            except Exception:
                pass
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit(f"{name} did not start:\n" + open(f"{TMP}/{name}.log").read())


CONNS = {}


def post(port, body, hdr=None):
    # one kept-alive connection per stand-in (and thread), as a router's connection pool: the
    # hand-off then does not pay for a TCP connect and a new client per request
    key = (port, threading.get_ident())
    data = json.dumps(body).encode()
    h = {"Content-Type": "application/json", **(hdr or {})}
    for attempt in (0, 1):
        c = CONNS.get(key) or CONNS.setdefault(key, http.client.HTTPConnection("127.0.0.1", port, timeout=120))
        t0 = time.perf_counter()
        try:
            c.request("POST", "/v1/completions", data, h)
            resp = c.getresponse()
            raw = resp.read()
            t = time.perf_counter() - t0
            if resp.status != 200:
                sys.exit(f"HTTP {resp.status} from port {port}: {raw[:300]!r}")
            return json.loads(raw), t
        except (http.client.HTTPException, ConnectionError):
            c.close()
            CONNS.pop(key, None)
            if attempt:
                raise


def post_stream(port, body, hdr=None):
    # streamed: seconds to the first chunk with text (TTFT, as `vllm bench serve` times it),
    # seconds to the end, and whether the stream ended with data: [DONE]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", json.dumps(dict(body, stream=True)).encode(),
              {"Content-Type": "application/json", **(hdr or {})})
    resp, ttft, done, buf = c.getresponse(), None, False, b""
    while True:
        line = resp.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            d = line[6:].strip()
            if d == b"[DONE]":
                done = True
            elif ttft is None and json.loads(d).get("choices", [{}])[0].get("text"):
                ttft = time.perf_counter() - t0
    return ttft, time.perf_counter() - t0, done


def prompt(n, salt):
    base = f"{salt} the quick brown fox jumps over the lazy dog. "
    return (base * (n // len(base) + 1))[:n]


def stage(name, rid, key):
    # the stand-in's debug line: "request <id>: handoff <key>=<mono ns> ..."
    pat = re.compile(r"request cmpl-%s\S*: handoff .*\b%s=(\d+)" % (re.escape(rid), key))
    for _ in range(100):
        for line in open(f"{TMP}/{name}.log"):
            m = pat.search(line)
            if m:
                return int(m.group(1))
        time.sleep(0.02)
    return None


def write_ms(name, rid):
    # V1 prefill: "Sending kv_caches for request cmpl-<id>..." then "kv1: WRITE ...: <ms> ms"
    want, cur = "cmpl-" + rid, None
    for line in open(f"{TMP}/{name}.log"):
        m = re.search(r"Sending kv_caches for request (\S+)", line)
        if m:
            cur = m.group(1)
        m = re.search(r"kv1: WRITE .*: ([\d.]+) ms", line)
        if m and cur and cur.startswith(want):
            return float(m.group(1)) / 1e3
    return None


def split(gen, rid, t_have, t_ver):
    # the prefill may log its WRITE's line after the decode has verified: look again a while
    for _ in range(50):
        sp = split_once(gen, rid, t_have, t_ver)
        if sp or not (t_have and t_ver and t_ver > t_have):
            return sp
        time.sleep(0.02)
    return None


def split_once(gen, rid, t_have, t_ver):
    # where the hand-off window (kv_ready on P to kv_verified on D) went, in ms, from the
    # stand-ins' debug lines: lead (before any KV byte moves: V0 the router hop and the
    # select's query, tokens and roi round trips; V1 from kv_ready to the WRITE's start),
    # move (V0 the keys, values and hidden READs; V1 the WRITE) and tail (the rest: V1 the
    # check's end and the done notice after the WRITE; V0 none, its check ends with the READs)
    if not (t_have and t_ver and t_ver > t_have):
        return None
    win = (t_ver - t_have) / 1e6
    if gen == "v0":
        last = None
        for line in open(f"{TMP}/D0.log"):
            m = re.search(r"drop_select of \d+ tokens: .* keys ([\d.]+), values ([\d.]+), hidden ([\d.]+) ms", line)
            if m:
                last = sum(float(x) for x in m.groups())
            elif f"request cmpl-{rid}" in line and "kvc_drop_select rank 0" in line:
                return dict(lead_ms=win - last, move_ms=last, tail_ms=0.0) if last is not None else None
        return None
    for line in open(f"{TMP}/P{gen}.log"):
        m = re.search(r"kv1: WRITE .*: ([\d.]+) ms \(t=(\d+)\)", line)
        if m and t_have <= int(m.group(2)) <= t_ver:
            t0, ms = int(m.group(2)), float(m.group(1))
            return dict(lead_ms=(t0 - t_have) / 1e6, move_ms=ms, tail_ms=max(0.0, win - (t0 - t_have) / 1e6 - ms))
    return None


def body(p, mt, kvtp=None):
    b = {"model": MODEL, "prompt": p, "max_tokens": mt, "temperature": 0}
    if kvtp is not None:
        b["kv_transfer_params"] = kvtp
    return b


def run_gen(gen, plain, eng_gbs):
    rows = []
    op = "read" if gen == "v0" else "write"
    if gen == "v0":
        ms = subprocess.Popen([f"{a.bin}/pdkv-metaserver", "--port", "0", "--host", "127.0.0.1"],
                              stdout=open(f"{TMP}/ms.log", "w"), stderr=subprocess.STDOUT)
        procs.append(ms)
        for _ in range(100):
            m = re.search(r"127\.0\.0\.1:(\d+)/metadata", open(f"{TMP}/ms.log").read())
            if m: break
            time.sleep(0.05)
        base = 20000 + (os.getpid() % 1000) * 10
        cfgp = f"{TMP}/mooncake.json"
        json.dump({"prefill_url": f"127.0.0.1:{base}", "decode_url": f"127.0.0.1:{base}",
                   "metadata_server": f"http://127.0.0.1:{m.group(1)}/metadata", "protocol": "tcp",
                   "device_name": ""}, open(cfgp, "w"))
        env = {"MOONCAKE_CONFIG_PATH": cfgp}
        kt = '{"kv_connector":"MooncakeConnector","kv_role":"%s","kv_rank":%d,"kv_parallel_size":2,"kv_buffer_size":4e9}'
        P = start("P0", ["--vllm-version", "0.8", "--kv-transfer-config", kt % ("kv_producer", 0)], env)
        D = start("D0", ["--vllm-version", "0.8", "--kv-transfer-config", kt % ("kv_consumer", 1)], env)
        boot = None
    else:
        boot = free_port()
        env = {"VLLM_MOONCAKE_BOOTSTRAP_PORT": str(boot)}
        kt = '{"kv_connector":"MooncakeConnector","kv_role":"%s","kv_connector_extra_config":{"mooncake_protocol":"tcp"}}'
        ver = "0.12" if gen == "a" else "0.18"  # gen A: ZMQ side channel; bn: bootstrap server
        P = start("P" + gen, ["--vllm-version", ver, "--kv-transfer-config", kt % "kv_producer"], env)
        D = start("D" + gen, ["--vllm-version", ver, "--kv-transfer-config", kt % "kv_consumer"], env)
        if gen != "a":
            eng = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{boot}/query").read())["0"]["engine_id"]
    for n in [int(t) for t in a.tokens.split(",")]:
        # the engine in the same shape right before and after this size's hand-offs (the host
        # is shared): the ratio is to the better of the two
        runs = [engine(op, n)]
        print(f"# engine {op} {n} tokens: {runs[0]} GB/s", flush=True)
        for rep in range(a.reps + 1):  # first = warm-up
            rid = uuid.uuid4().hex
            p = prompt(n, rid[:8])
            hdr = {"X-Request-Id": rid}
            _, tplain = post(plain, body(p, 1))
            splain, _, _ = post_stream(plain, body(p, 1))
            sdec, sdone, hdr2 = None, True, {"X-Request-Id": uuid.uuid4().hex}
            if gen == "v0":
                _, tp = post(P, body(p, 1), hdr)
                r, td = post(D, body(p, 1), hdr)
            elif gen == "a":
                # gen A: the prefill answers with its side channel, which the decode is given
                rp, tp = post(P, body(p, 1, {"do_remote_decode": True, "do_remote_prefill": False}), hdr)
                r, td = post(D, body(p, 1, rp["kv_transfer_params"]), hdr)
                # the same hand-off once more, decode streamed: its TTFT
                rp, _ = post(P, body(p, 1, {"do_remote_decode": True, "do_remote_prefill": False}), hdr2)
                sdec, _, sdone = post_stream(D, body(p, 1, rp["kv_transfer_params"]), hdr2)
            else:
                # gen B's router contract: the prefill and the decode at once (the decode asks
                # for the KV and the prefill writes it as soon as it has it), so the hand-off
                # window holds no router hop
                tid = "xfer-" + rid
                pr = {}
                th = threading.Thread(target=lambda: pr.update(
                    r=post(P, body(p, 1, {"do_remote_decode": True, "do_remote_prefill": False, "transfer_id": tid}), hdr)))
                th.start()
                r, _ = post(D, body(p, 1, {"do_remote_decode": False, "do_remote_prefill": True,
                                            "remote_bootstrap_addr": f"http://127.0.0.1:{boot}",
                                            "remote_engine_id": eng, "transfer_id": tid}), hdr)
                th.join()
                tp = pr["r"][1]
                # the same hand-off once more, the prefill first and the decode streamed after
                # it: the decode's TTFT and request time then hold the hand-off and the first
                # token only, not the prefill's compute
                tid2 = "xfer-" + hdr2["X-Request-Id"]
                post(P, body(p, 1, {"do_remote_decode": True, "do_remote_prefill": False, "transfer_id": tid2}), hdr2)
                sdec, td, sdone = post_stream(D, body(p, 1, {"do_remote_decode": False, "do_remote_prefill": True,
                                                             "remote_bootstrap_addr": f"http://127.0.0.1:{boot}",
                                                             "remote_engine_id": eng, "transfer_id": tid2}), hdr2)
            if not sdone:
                sys.exit(f"streamed decode of {n} tokens did not end with [DONE]")
            t_have = stage(f"P{gen[-1] if gen=='v0' else gen}", rid, "kv_ready")
            t_ver = stage(f"D{gen[-1] if gen=='v0' else gen}", rid, "kv_verified")
            kvb = n * 57344
            # V0 also moves the hidden states (hidden_size 3584 x 2 bytes per token), the tokens
            # (i64) and the roi (4 bytes per token): the bytes the engine moved for this hand-off
            wire = kvb + (n * (7168 + 12) if gen == "v0" else 0)
            gp = kvb / ((t_ver - t_have) / 1e9) / 1e9 if t_have and t_ver and t_ver > t_have else None
            if rep == 0:
                continue
            wr = write_ms(f"P{gen}", rid if gen == "a" else hdr2["X-Request-Id"]) if gen != "v0" else None
            sp = split(gen, rid, t_have, t_ver) or dict(lead_ms=None, move_ms=None, tail_ms=None)
            rows.append(dict(gen=gen, tokens=n, kv_mb=kvb / 1e6, prefill_s=tp, decode_s=td, plain_s=tplain,
                             write_s=wr, write_share=wr / td if wr else None,
                             plain_ttft_s=splain, decode_ttft_s=sdec,
                             handoff_s=(t_ver - t_have) / 1e9 if gp else None, goodput_gbs=gp,
                             wire_mb=wire / 1e6, wire_gbs=gp * wire / kvb if gp else None, **sp))
            print(json.dumps(rows[-1]), flush=True)
        runs.append(engine(op, n))
        print(f"# engine {op} {n} tokens (after the hand-offs): {runs[1]} GB/s", flush=True)
        eng_gbs[(gen, n)] = max([x for x in runs if x is not None], default=None)
    # CPU the two stand-ins spent (user + system), per GB of KV handed over: less noisy than
    # wall time on a shared host
    tot = sum(r["kv_mb"] for r in rows) / 1e3 * (2 if gen != "v0" else 1) * (a.reps + 1) / a.reps
    for name, pr in (("prefill", procs[-2]), ("decode", procs[-1])):
        f = open(f"/proc/{pr.pid}/stat").read().rsplit(")", 1)[1].split()
        cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        print(f"# cpu {gen} {name}: {cpu:.2f} s for ~{tot:.1f} GB of KV = {cpu / tot:.3f} s/GB", flush=True)
    for pr in procs[1:]:
        pr.terminate()
    return rows


def engine(op, n):
    # the hand-off's shape: one request per KV buffer (2 x layers), each one run of n/16 blocks
    bs = (n + 15) // 16 * 16384
    out = subprocess.run([f"{a.bin}/pdkv-bench", "--mode=loopback", "--protocol=tcp", "--metadata_server=P2PHANDSHAKE",
                          f"--operation={op}", f"--block_size={bs}", "--batch_size=56", f"--duration={a.engine_duration}",
                          f"--gap-ms={a.engine_gap_ms}", f"--json={TMP}/eng-{op}.json"], capture_output=True, text=True)
    try:
        j = json.load(open(f"{TMP}/eng-{op}.json"))
        rows = j.get("rows", j if isinstance(j, list) else [])
        return max(float(r.get("gbps", r.get("bandwidth", 0))) for r in rows)
    except Exception:
        m = re.findall(r"([\d.]+)\s*GB/s", out.stdout)
        return float(m[-1]) if m else None


def on_term(*_):
    for pr in procs:
        pr.terminate()
    sys.exit(1)


signal.signal(signal.SIGTERM, on_term)


def main():
    # what the figures depend on most: the host's CPUs and the TCP lanes per peer
    lanes = os.environ.get("MC_TCP_LANES_PER_PEER") or "default (1 up to 4 CPUs, 2 up to 15, 4 from 16)"
    print(f"# host: {os.cpu_count()} CPUs; TCP lanes per peer: {lanes}", flush=True)
    if a.engine_gap_ms:
        print(f"# engine: one-shot batches, {a.engine_gap_ms:g} ms idle between them (--engine-gap-ms)", flush=True)
    plain = start("plain", [])
    allrows = []
    eng = {}
    try:
        for gen in a.gens.split(","):
            allrows += run_gen(gen, plain, eng)
    finally:
        for pr in procs:
            pr.terminate()
    print("\n| gen | prompt tokens | KV MB | prefill request | decode request with KV | goodput | plain (recompute) "
          "| engine | ratio | ratio (bytes moved) | decode TTFT (stream) | plain TTFT (stream) | WRITE / decode "
          "| window: lead / move / tail |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    import statistics as st
    for gen in a.gens.split(","):
        for n in [int(t) for t in a.tokens.split(",")]:
            e = eng[(gen, n)]
            rs = [r for r in allrows if r["gen"] == gen and r["tokens"] == n]
            if not rs: continue
            med = lambda k: st.median([r[k] for r in rs if r[k] is not None]) if any(r[k] is not None for r in rs) else float("nan")
            g = med("goodput_gbs")
            print(f"| {gen} | {n:,} | {rs[0]['kv_mb']:.0f} | {med('prefill_s')*1e3:.0f} ms | {med('decode_s')*1e3:.0f} ms | "
                  f"{g:.2f} GB/s | {med('plain_s')*1e3:.0f} ms | {e:.2f} GB/s | {g / e * 100 if e else float('nan'):.0f} % | "
                  f"{med('wire_gbs') / e * 100 if e else float('nan'):.0f} % | "
                  f"{med('decode_ttft_s')*1e3:.0f} ms | {med('plain_ttft_s')*1e3:.0f} ms | "
                  f"{med('write_share')*100:.0f} % | "
                  f"{med('lead_ms'):.1f} / {med('move_ms'):.1f} / {med('tail_ms'):.1f} ms |")
    if a.json:
        json.dump({"engine": {f"{k[0]}-{k[1]}": v for k, v in eng.items()}, "engine_gap_ms": a.engine_gap_ms,
                   "rows": allrows}, open(a.json, "w"), indent=1)
    print(f"# logs in {TMP}")


main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# byo_router: small routers for pdkv's router conformance tests (Python 3 standard library only).
# --style toy|mooncake|quart picks the router it imitates; --drop-transfer-id and --fall-through
# make it non-conforming on purpose, so that pdkv's router_* checks have something to catch.
import argparse
import json
import threading
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
ENGINE_ID = None


def post(url, body, headers, stream=False):
    """POST JSON; returns (status, response object or bytes). Never raises for HTTP errors."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    for k, v in headers.items():
        req.add_header(k, v)
    try:
        resp = urllib.request.urlopen(req, timeout=120)
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 0, str(e).encode()
    if stream:
        return resp.status, resp
    return resp.status, resp.read()


def query_engine():
    global ENGINE_ID
    if ENGINE_ID is None:
        url = "http://%s:%d/query" % (ARGS.prefill_host, ARGS.bootstrap_port)
        with urllib.request.urlopen(url, timeout=5) as r:
            ENGINE_ID = json.loads(r.read())["0"]["engine_id"]
    return ENGINE_ID


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *a):
        print("byo_router: " + fmt % a, flush=True)

    def answer(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path in ("/health", "/healthcheck"):
            return self.answer(200, b'{"status":"ok"}')
        return self.answer(404, b'{"detail":"Not Found"}')

    def relay(self, status, resp):
        """Decode's answer to the client as it arrives (SSE passes through)."""
        if isinstance(resp, bytes):
            return self.answer(status or 502, resp or b'{"error":"decode unreachable"}')
        self.send_response(status)
        self.send_header("Content-Type", resp.headers.get("Content-Type", "application/json"))
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes
        while True:
            chunk = resp.read1(4096) if hasattr(resp, "read1") else resp.read(4096)
            if not chunk:
                break
            self.wfile.write(chunk)
            self.wfile.flush()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        path = self.path
        rid = str(uuid.uuid4())
        hdr = {"X-Request-Id": rid, "Authorization": "Bearer None"}
        p = dict(body)
        p["max_tokens"] = 1
        if ARGS.style == "quart":
            # the integration guide's proxy: prefill with max_tokens 1 and whatever else the
            # client sent (stream too), its answer and its errors ignored, then decode
            post(ARGS.prefill + path, p, {})
            return self.relay(*post(ARGS.decode + path, body, {}, stream=True))
        p["stream"] = False
        p.pop("stream_options", None)
        if ARGS.style == "toy":
            p["kv_transfer_params"] = {"do_remote_decode": True, "do_remote_prefill": False,
                                       "remote_engine_id": None, "remote_block_ids": None,
                                       "remote_host": None, "remote_port": None}
            st, ans = post(ARGS.prefill + path, p, hdr)
            d = dict(body)
            if 200 <= st < 300:
                kv = json.loads(ans).get("kv_transfer_params")
                if kv:
                    d["kv_transfer_params"] = kv
            elif not ARGS.fall_through:
                return self.answer(502, json.dumps({"error": "prefill failed: %d" % st}).encode())
            return self.relay(*post(ARGS.decode + path, d, hdr, stream=True))
        # mooncake_connector_proxy.py: prefill and decode at once, one transfer_id for both
        tid = "xfer-" + rid
        p["kv_transfer_params"] = {"do_remote_decode": True, "do_remote_prefill": False}
        d = dict(body)
        d["kv_transfer_params"] = {
            "do_remote_decode": False, "do_remote_prefill": True,
            "remote_bootstrap_addr": "http://%s:%d" % (ARGS.prefill_host, ARGS.bootstrap_port),
            "remote_engine_id": query_engine()}
        if not ARGS.drop_transfer_id:
            p["kv_transfer_params"]["transfer_id"] = tid
            d["kv_transfer_params"]["transfer_id"] = tid
        t = threading.Thread(target=post, args=(ARGS.prefill + path, p, hdr), daemon=True)
        t.start()
        return self.relay(*post(ARGS.decode + path, d, hdr, stream=True))


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--prefill", required=True, help="http://host:port")
    ap.add_argument("--decode", required=True, help="http://host:port")
    ap.add_argument("--prefill-host", default="127.0.0.1")
    ap.add_argument("--bootstrap-port", type=int, default=8998)
    ap.add_argument("--style", choices=["toy", "mooncake", "quart"], default="toy")
    ap.add_argument("--drop-transfer-id", action="store_true")
    ap.add_argument("--fall-through", action="store_true",
                    help="on a prefill error call decode anyway (a silent recompute)")
    ARGS = ap.parse_args()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer((ARGS.host, ARGS.port), Handler).serve_forever()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# readme_recipes.py: the README's runnable shell blocks, for harness/tests/test_readme_recipes.sh.
# A block is runnable when the line before it (blanks aside) is
#   <!-- recipe: NAME; expect: REGEX -->
# Its indented lines, unindented, are the recipe exactly as written, with two rewrites so it runs
# on loopback beside other tests: every well-known port it names (8000, 8010, 8020, 8080, 8100,
# 8200, 8998, 13003) becomes a free one, and 0.0.0.0 / localhost become 127.0.0.1.
#   readme_recipes.py README.md --list      the names, one per line
#   readme_recipes.py README.md NAME        the rewritten script on stdout; the expect REGEX on
#                                           stderr's first line
import re
import socket
import sys

PORTS = (8000, 8010, 8020, 8080, 8100, 8200, 8998, 13003)
MARK = re.compile(r"^<!-- recipe: ([\w-]+); expect: (.*) -->\s*$")


def recipes(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = {}, 0
    while i < len(lines):
        m = MARK.match(lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and not lines[i].strip():
            i += 1
        body = []
        while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
            body.append(lines[i][4:])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        out[m.group(1)] = (m.group(2), "\n".join(body))
    return out


def free(port, taken, span=()):
    """a free port for `port`; with span, also free at each offset (V0's B+9, B+10, ...)"""
    for _ in range(200):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        cand = [p] + [p + o for o in span]
        if any(c in taken or c > 65000 for c in cand):
            continue
        ok = True
        for c in cand[1:]:
            t = socket.socket()
            try:
                t.bind(("127.0.0.1", c))
            except OSError:
                ok = False
            t.close()
        if ok:
            taken.update(cand)
            return p
    sys.exit(f"readme_recipes: no free port for {port}")


def rewrite(body):
    taken, mapping = set(), {}
    for p in PORTS:
        if re.search(rf"\b{p}\b", body):
            # the V0 pipe binds B+9/B+10 on prefill and B+109/B+110 on decode (+100 rule)
            span = (9, 10, 109, 110) if p == 13003 else ()
            mapping[p] = free(p, taken, span)
    for p, q in mapping.items():
        body = re.sub(rf"\b{p}\b", str(q), body)
    body = body.replace("0.0.0.0", "127.0.0.1")
    return re.sub(r"\blocalhost\b", "127.0.0.1", body)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: readme_recipes.py README.md --list|NAME")
    rs = recipes(sys.argv[1])
    if sys.argv[2] == "--list":
        print("\n".join(rs))
        return
    if sys.argv[2] not in rs:
        sys.exit(f"readme_recipes: {sys.argv[1]} has no recipe {sys.argv[2]!r}")
    expect, body = rs[sys.argv[2]]
    print(expect, file=sys.stderr)
    print(rewrite(body))


main()

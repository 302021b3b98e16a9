#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# callcycles: file-level dependency cycles among the C files of one folder (not its subfolders).
# Each FOLDER/*.c is compiled on its own (the Makefile's flags; $CC, $CFLAGS override) and `nm`
# lists the symbols it defines and those it uses. File A depends on file B when A uses a symbol
# B defines: a call, a function's address taken, a global read. A call through a pointer
# (an ops struct filled elsewhere) references no symbol, so it is no edge. The strongly
# connected components of more than one file are the cycles: printed with the symbols that
# close them; exit 1 when there is one, 0 when none, 2 when a file does not compile.
#   usage: ci/callcycles.py FOLDER [--order]
#   --order: also print the files bottom to top (each depends only on files printed before it,
#            cycles printed as one group), with what each uses from the others.
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

FLAGS = ['-std=gnu11', '-D_GNU_SOURCE', '-pthread', '-O0', '-w', '-Iref', '-Iref/common',
         '-Iharness', '-I/usr/include/cjson']


def symbols(src, tmp):
    obj = os.path.join(tmp, os.path.basename(src) + '.o')
    cc = os.environ.get('CC', 'cc')
    extra = os.environ.get('CFLAGS', '').split()
    r = subprocess.run([cc, *FLAGS, *extra, '-c', src, '-o', obj], capture_output=True, text=True)
    if r.returncode:
        return src, None, r.stderr
    out = subprocess.run(['nm', '-P', obj], capture_output=True, text=True, check=True).stdout
    defs, uses = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind == 'U':
            uses.add(name)
        elif kind.isupper() and kind not in 'NW':  # global text, data, bss, read-only
            defs.add(name)
    return src, (defs, uses), ''


def sccs(nodes, edges):
    """Tarjan's algorithm, iterative: the components in reverse topological order."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                out.append(sorted(comp))
    return out


def main(argv):
    args = [a for a in argv[1:] if not a.startswith('--')]
    order = '--order' in argv[1:]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print('usage: ci/callcycles.py FOLDER [--order]   (e.g. ref/kv1, harness/lib)',
              file=sys.stderr)
        return 2
    folder = os.path.abspath(args[0])
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))  # for -I
    folder = os.path.relpath(folder)
    srcs = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith('.c'))
    if not srcs:
        print(f'callcycles: {folder}: no .c files', file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        res = list(ex.map(lambda s: symbols(s, tmp), srcs))
    bad = [(s, e) for s, t, e in res if t is None]
    for s, e in bad:
        print(f'callcycles: {s} does not compile:\n{e}', file=sys.stderr)
    if bad:
        return 2
    files = [os.path.basename(s) for s, _, _ in res]
    owner = {}
    for s, (defs, _), _ in res:
        for d in defs:
            owner.setdefault(d, os.path.basename(s))
    uses = {}  # (from, to) -> symbols
    edges = {f: set() for f in files}
    for s, (_, used), _ in res:
        a = os.path.basename(s)
        for u in used:
            b = owner.get(u)
            if b and b != a:
                edges[a].add(b)
                uses.setdefault((a, b), set()).add(u)
    comps = sccs(files, edges)  # dependencies come first
    cycles = [c for c in comps if len(c) > 1]
    if order:
        print(f'{folder}: files bottom to top (each uses only files above it)')
        for c in comps:
            for f in c:
                deps = sorted(edges[f])
                print(f'  {f}' + (f'  <- {" ".join(deps)}' if deps else ''))
    for c in cycles:
        print(f'cycle of {len(c)} files in {folder}: {" ".join(c)}')
        for a in c:
            for b in c:
                if (a, b) in uses:
                    syms = sorted(uses[(a, b)])
                    more = f' (+{len(syms) - 4})' if len(syms) > 4 else ''
                    print(f'  {a} -> {b}: {", ".join(syms[:4])}{more}')
    print(f'callcycles: {folder}: {len(files)} files, {len(cycles)} cycle(s)')
    return 1 if cycles else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

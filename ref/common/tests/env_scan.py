#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# env_scan: every environment variable the C sources under ref/ and harness/ read (pd_env_*, the
# private wrappers listed below, getenv) and the user-facing ones the build's entry scripts read
# must have a row in ref/common/pd_env_table.c; and product code reads them only through the
# pd_env API: a raw getenv()/secure_getenv() outside ref/common/pd_env.c fails unless WHITELIST
# names that file and variable, with the reason.
# Usage: env_scan.py NAMES_FILE [--only FILE.c...]   (NAMES_FILE: `pdkv-doctor --env --names`;
#        --only: scan just FILE.c as product code, for the test that shows the scan can fail)
import re
import subprocess
import sys

# helper -> indices of its string-literal arguments that are variable names
HELPERS = {
    "env_cap": None, "env_i64": None, "env_int": None, "env_port": None,
    "env_chunk": None, "env_given": None, "pd_spin_parse_ns": None, "pd_chunk_parse": None,
    "pd_env_int": None, "pd_env_size": None, "pd_env_bool": None, "pd_env_float": None,
    "pd_env_str": None, "pd_env_set": None, "pd_env_raw": None, "pd_env_int_or": None,
    "getenv": None, "secure_getenv": None,
}
RAW = {"getenv", "secure_getenv"}
# (file, variable) -> why this file reads the variable with a raw getenv(); each one still has a
# row in the table (doctor --env and the docs list it)
WHITELIST = {
    ("ref/common/pd_log.c", "PDKV_LOG"):
        "the logger is below pd_env (pd_env warns through pd_warn), so reading its level "
        "through pd_env would make a call cycle between the two files and recurse on the first "
        "log line; it accepts exactly the row's choices",
}
SCRIPTS = ["ci/run-tests.sh", "ci/bench.sh", "ci/fuzz-smoke.sh", "ci/rxe/run-rxe-tier.sh",
           "ci/gpu/run-gpu-tier.sh", "Makefile"]
SCRIPT_SKIP = {"BUILD", "CC", "CFLAGS", "OPT", "SAN", "CLANG_TIDY", "TSAN_OPTIONS"}  # make's own
# the API itself: getenv(name) of the table's rows
API = {"ref/common/pd_env.c"}

NAME = re.compile(r'"([A-Z][A-Z0-9_]{2,})"')
CALL = re.compile(r'\b(' + "|".join(HELPERS) + r')\s*\(')
FUNC = re.compile(r'^[a-z].*\b([a-z_0-9]+)\s*\([^;]*$')


def args_of(src, start):
    depth, i = 1, start
    while i < len(src) and depth:
        depth += {"(": 1, ")": -1}.get(src[i], 0)
        i += 1
    return src[start:i - 1]


def scan_c(path, found, errors):
    src = open(path, encoding="utf-8", errors="replace").read()
    # comments out, newlines kept (line numbers stay right)
    src = re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), src, flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    for m in CALL.finditer(src):
        if src[max(0, m.start() - 1)] in "_." or re.match(r'[a-z_]', src[m.start() - 1:m.start()] or " "):
            continue
        line = src.count("\n", 0, m.start()) + 1
        args = args_of(src, m.end())
        # a definition ("static int env_int(const char *name...") is not a read
        before = src[src.rfind("\n", 0, m.start()) + 1:m.start()]
        if re.search(r'\b(int|void|bool|size_t|char|uint64_t|int64_t)\s*\**\s*$', before):
            continue
        names = NAME.findall(args)
        for n in names:
            found.setdefault(n, f"{path}:{line}")
        if m.group(1) in RAW and not all((path, n) in WHITELIST for n in names or ["?"]):
            errors.append(f"{path}:{line}: raw {m.group(1)}({args.strip()}) in "
                          f"{enclosing(src, m.start())}(): read it through the pd_env API "
                          "(ref/common/pd_env.h) with its row in pd_env_table.c")


def enclosing(src, pos):
    for ln in reversed(src[:pos].split("\n")):
        m = re.match(r'^[a-z][^(;=]*?\b([a-z_0-9]+)\s*\(', ln)
        if m:
            return m.group(1)
    return "?"


def main():
    table = {l.strip() for l in open(sys.argv[1]) if l.strip()}
    only = sys.argv[3:] if sys.argv[2:3] == ["--only"] else None
    files = subprocess.run(["git", "ls-files", "ref", "harness"], capture_output=True,
                           text=True, check=True).stdout.split()
    found, errors = {}, []
    for f in only if only is not None else files:
        if only is not None or (f.endswith((".c", ".h")) and "/tests/" not in f and
                                "/fuzz/" not in f and f not in API):
            scan_c(f, found, errors)
    for (f, n), why in WHITELIST.items():
        if not why or f not in files:
            errors.append(f"env_scan.py: WHITELIST entry {f} {n}: no reason, or no such file")
    for s in SCRIPTS if only is None else []:
        for i, ln in enumerate(open(s), 1):
            for n in re.findall(r'\$\{([A-Z][A-Z0-9_]+):-', ln) + \
                    re.findall(r'^([A-Z][A-Z0-9_]+)\s*\?=', ln):
                if n not in SCRIPT_SKIP:
                    found.setdefault(n, f"{s}:{i}")
    missing = sorted(n for n in found if n not in table)
    for n in missing:
        errors.append(f"{found[n]}: {n} is read but has no row in ref/common/pd_env_table.c")
    stale = sorted(table - set(found)) if only is None else []
    for n in stale:
        errors.append(f"pd_env_table.c: {n} has a row but nothing reads it")
    for e in errors:
        print("FAIL:", e)
    print(f"env_scan: {len(found)} variables read, {len(table)} rows, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

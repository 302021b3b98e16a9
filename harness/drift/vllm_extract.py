#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# vllm_extract.py: reads a vLLM tree (installed package, source checkout or wheel) with `ast`,
# never importing it, and prints what `pdkv vllm-drift` compares with pdkv's model, as JSON.
"""Usage: vllm_extract.py --root PATH

Prints one JSON object on stdout. On a problem: {"error": TEXT, "code": CODE} and exit 2, with
CODE one of no_path, not_vllm, bad_wheel, no_connector (the last one still carries "version").
Standard library only; nothing of the tree is executed.
"""
import ast
import json
import os
import re
import sys
import zipfile

CONN_DIR = "vllm/distributed/kv_transfer/kv_connector/v1/mooncake"
CONN_SINGLE = "vllm/distributed/kv_transfer/kv_connector/v1/mooncake_connector.py"
V0_PIPE = "vllm/distributed/kv_transfer/kv_pipe/mooncake_pipe.py"
SOCK_TYPES = {"REQ", "REP", "DEALER", "ROUTER", "PUB", "SUB", "XPUB", "XSUB", "PUSH", "PULL",
              "PAIR", "STREAM"}
MAX_FILE = 8 << 20


class Fail(Exception):
    def __init__(self, code, text, **extra):
        super().__init__(text)
        self.code, self.text, self.extra = code, text, extra


class Tree:
    """Files of a vLLM tree by path relative to the directory that holds `vllm/`."""

    def __init__(self, path):
        self.zip = None
        self.meta_version = None
        if not os.path.exists(path):
            raise Fail("no_path", "%s: no such file or directory" % path)
        if os.path.isfile(path):
            self._open_wheel(path)
            return
        path = os.path.abspath(path)
        if os.path.isfile(os.path.join(path, "vllm", "__init__.py")):
            self.base, self.kind = path, "source"
        elif (os.path.basename(path) == "vllm"
              and os.path.isfile(os.path.join(path, "__init__.py"))):
            self.base, self.kind = os.path.dirname(path), "package"
        else:
            raise Fail("not_vllm", "%s is not a vLLM tree: expected vllm/__init__.py under it "
                       "(a source checkout), a directory named vllm with __init__.py (the "
                       "installed package) or a .whl file" % path)
        self._dir_metadata()

    def _open_wheel(self, path):
        self.kind, self.base = "wheel", path
        try:
            self.zip = zipfile.ZipFile(path)
            self.names = set(self.zip.namelist())
        except (zipfile.BadZipFile, OSError) as e:
            raise Fail("bad_wheel", "%s: cannot read it as a wheel (a zip file): %s" % (path, e))
        if "vllm/__init__.py" not in self.names:
            raise Fail("not_vllm", "%s: a zip file without vllm/__init__.py, so not a vLLM "
                       "wheel" % path)
        for n in sorted(self.names):
            if re.fullmatch(r"vllm-[^/]*\.dist-info/METADATA", n):
                self.meta_version = _metadata_version(self.read(n))

    def _dir_metadata(self):
        cands = []
        try:
            for n in sorted(os.listdir(self.base)):
                if re.fullmatch(r"vllm-.*\.(dist|egg)-info", n):
                    cands.append(os.path.join(n, "METADATA"))
                    cands.append(os.path.join(n, "PKG-INFO"))
        except OSError:
            pass
        if self.kind == "source":
            cands.append("PKG-INFO")
        for c in cands:
            v = _metadata_version(self.read(c))
            if v:
                self.meta_version = v
                return

    def read(self, rel):
        if self.zip is not None:
            if rel not in self.names:
                return None
            info = self.zip.getinfo(rel)
            if info.file_size > MAX_FILE:
                return None
            try:
                return self.zip.read(rel).decode("utf-8", "replace")
            except (zipfile.BadZipFile, OSError, RuntimeError) as e:
                raise Fail("bad_wheel", "%s: cannot read %s: %s" % (self.base, rel, e))
        p = os.path.join(self.base, rel)
        try:
            if not os.path.isfile(p) or os.path.getsize(p) > MAX_FILE:
                return None
            with open(p, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None

    def listdir(self, rel):
        """The .py files directly in rel (sorted), as paths relative to the tree."""
        if self.zip is not None:
            pre = rel.rstrip("/") + "/"
            return sorted(n for n in self.names if n.startswith(pre) and "/" not in n[len(pre):]
                          and n.endswith(".py"))
        p = os.path.join(self.base, rel)
        try:
            return sorted(rel + "/" + n for n in os.listdir(p) if n.endswith(".py")
                          and os.path.isfile(os.path.join(p, n)))
        except OSError:
            return []


def _metadata_version(text):
    if not text:
        return None
    m = re.search(r"^Version:\s*(\S+)", text, re.M)
    return m.group(1) if m else None


def parse(tree, rel):
    src = tree.read(rel)
    if src is None:
        return None
    try:
        return ast.parse(src, filename=rel)
    except (SyntaxError, ValueError):
        return None


def src_of(node):
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - any node ast cannot print
        return "?"


def const_str(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def fstring(node):
    """A str constant, an f-string with {} for each value, or a + of those; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            out.append(v.value if isinstance(v, ast.Constant) else "{}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = fstring(node.left), fstring(node.right)
        return a + b if a is not None and b is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return None
    return None


def version_of(tree):
    if tree.meta_version:
        return tree.meta_version, "metadata"
    for rel in ("vllm/_version.py", "vllm/version.py"):
        mod = parse(tree, rel)
        if mod is None:
            continue
        for n in ast.walk(mod):
            if isinstance(n, ast.Assign):
                names = [t.id for t in n.targets if isinstance(t, ast.Name)]
                v = const_str(n.value)
                # a checkout without the generated _version.py falls back to "dev": no version
                if {"__version__", "version"} & set(names) and v and re.match(r"v?\d+\.\d+", v):
                    return v, rel
    return None, None


def connector_files(tree):
    files = [f for f in tree.listdir(CONN_DIR) if "store" not in os.path.basename(f)]
    if any(f.endswith("/mooncake_connector.py") for f in files):
        return "package", files
    if tree.read(CONN_SINGLE) is not None:
        return "single", [CONN_SINGLE]
    return None, []


def follow_shim(tree, rel, mod):
    """A compatibility shim (a module that only re-imports another path): the real file."""
    if any(isinstance(n, (ast.ClassDef, ast.FunctionDef)) for n in mod.body):
        return rel, mod
    for n in ast.walk(mod):
        s = const_str(n)
        if s and re.fullmatch(r"vllm(\.\w+)+", s):
            real = s.replace(".", "/") + ".py"
            m = parse(tree, real)
            if m is not None:
                return real, m
    return rel, mod


# --- msgspec structs ----------------------------------------------------------------------

def is_struct_base(b):
    return (isinstance(b, ast.Attribute) and b.attr == "Struct" and src_of(b.value) == "msgspec") \
        or (isinstance(b, ast.Name) and b.id == "Struct")


def default_of(node):
    if isinstance(node, ast.Call) and src_of(node.func) in ("msgspec.field", "field"):
        for k in node.keywords:
            if k.arg == "default_factory":
                f = src_of(k.value)
                return {"list": "[]", "dict": "{}", "set": "set()", "tuple": "()"}.get(f, f + "()")
            if k.arg == "default":
                return src_of(k.value)
        return None
    return src_of(node)


def structs_of(mod, rel, known):
    out = []
    for c in ast.walk(mod):
        if not isinstance(c, ast.ClassDef):
            continue
        direct = any(is_struct_base(b) for b in c.bases)
        inherited = [src_of(b) for b in c.bases if src_of(b) in known]
        if not direct and not inherited:
            continue
        opts = {}
        for k in c.keywords:
            if k.arg:
                v = k.value
                opts[k.arg] = v.value if isinstance(v, ast.Constant) else src_of(v)
        fields = []
        for parent in inherited:
            fields.extend(dict(f, inherited_from=parent) for f in known[parent]["fields"])
        for s in c.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                if src_of(s.annotation).startswith(("ClassVar", "typing.ClassVar")):
                    continue
                d = default_of(s.value) if s.value is not None else None
                fields.append({"name": s.target.id, "type": src_of(s.annotation),
                               "default": d, "required": s.value is None})
        st = {"name": c.name, "file": rel, "options": opts, "fields": fields,
              "bases": [src_of(b) for b in c.bases]}
        known[c.name] = st
        out.append(st)
    return out


# --- bootstrap routes, sockets, extra config, error strings --------------------------------

HTTP_METHODS = {"get", "post", "put", "delete", "patch"}


def pydantic_models(mod):
    models = {}
    for c in ast.walk(mod):
        if isinstance(c, ast.ClassDef) and any(src_of(b).endswith("BaseModel") for b in c.bases):
            models[c.name] = [{"name": s.target.id, "type": src_of(s.annotation),
                               "required": s.value is None}
                              for s in c.body
                              if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    return models


def route_call(node):
    """`X.app.post("/p")` (call or decorator): ("POST", "/p"), else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in HTTP_METHODS and node.args and const_str(node.args[0])
            and const_str(node.args[0]).startswith("/")):
        return node.func.attr.upper(), const_str(node.args[0])
    return None


def routes_of(mods):
    funcs, models, routes = {}, {}, []
    for _, mod in mods:
        models.update(pydantic_models(mod))
        for f in ast.walk(mod):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs[f.name] = f
    for rel, mod in mods:
        for n in ast.walk(mod):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in n.decorator_list:
                    r = route_call(d)
                    if r:
                        routes.append((r, n.name, rel))
            elif isinstance(n, ast.Call) and route_call(n.func) and n.args:
                h = n.args[0]
                name = h.attr if isinstance(h, ast.Attribute) else getattr(h, "id", None)
                routes.append((route_call(n.func), name, rel))
    out = []
    for (method, path), handler, rel in routes:
        model = None
        f = funcs.get(handler)
        if f is not None:
            for a in f.args.args:
                ann = src_of(a.annotation) if a.annotation is not None else None
                if ann in models:
                    model = ann
        out.append({"method": method, "path": path, "handler": handler, "file": rel,
                    "model": model, "model_fields": models.get(model, []) if model else []})
    return sorted(out, key=lambda r: (r["path"], r["method"]))


def sockets_of(mods):
    found = set()
    for _, mod in mods:
        for n in ast.walk(mod):
            if (isinstance(n, ast.Attribute) and n.attr in SOCK_TYPES
                    and src_of(n.value) in ("zmq", "zmq.asyncio")):
                found.add(n.attr)
    return sorted(found)


def extra_keys_of(mods):
    keys = {}
    for rel, mod in mods:
        for n in ast.walk(mod):
            if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Attribute) or not n.args:
                continue
            key = const_str(n.args[0])
            if key is None:
                continue
            recv = src_of(n.func.value)
            if n.func.attr == "get_from_extra_config" or (
                    n.func.attr == "get" and "extra_config" in recv):
                d = src_of(n.args[1]) if len(n.args) > 1 else None
                keys.setdefault(key, {"key": key, "default": d, "file": rel})
        for n in ast.walk(mod):
            if isinstance(n, ast.Subscript) and "extra_config" in src_of(n.value):
                key = const_str(n.slice)
                if key:
                    keys.setdefault(key, {"key": key, "default": None, "file": rel})
    return sorted(keys.values(), key=lambda k: k["key"])


def _texty(t):
    return t is not None and re.search(r"[A-Za-z]", re.sub(r"\{\}", "", t)) is not None


class _Texts:
    """The strings an expression can evaluate to, followed through local names, conditional
    expressions and the return values of the module's own functions (a few levels deep)."""

    def __init__(self, funcs):
        self.funcs = funcs

    def of(self, node, fn, depth=3):
        s = fstring(node)
        if s is not None:
            return [s]
        if depth <= 0:
            return []
        if isinstance(node, ast.IfExp):
            return self.of(node.body, fn, depth - 1) + self.of(node.orelse, fn, depth - 1)
        if isinstance(node, ast.Name) and fn is not None:
            out = []
            for n in ast.walk(fn):
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    if any(isinstance(t, ast.Name) and t.id == node.id for t in targets):
                        out += self.of(n.value, fn, depth - 1)
            return out
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            callee = self.funcs.get(name)
            if callee is not None:
                out = []
                for r in ast.walk(callee):
                    if isinstance(r, ast.Return) and r.value is not None:
                        out += self.of(r.value, callee, depth - 1)
                return out
        return []


def err_msgs_of(mods):
    """Texts P sends as MooncakeXferResponse.err_msg: err_msg= arguments (followed through
    names and helper functions) and strings assigned to any name ending in err_msg."""
    msgs, seen = [], set()

    def note(t, rel, where):
        if _texty(t) and t not in seen:
            seen.add(t)
            msgs.append({"text": t, "file": rel, "function": where})

    for rel, mod in mods:
        funcs = {f.name: f for f in ast.walk(mod)
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        texts = _Texts(funcs)
        for fn in funcs.values():
            for n in ast.walk(fn):
                if isinstance(n, ast.Call):
                    for k in n.keywords:
                        if k.arg == "err_msg":
                            for t in texts.of(k.value, fn):
                                note(t, rel, fn.name)
                elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    if any(isinstance(t, ast.Name) and t.id.endswith("err_msg")
                           for t in targets):
                        note(fstring(n.value), rel, fn.name)
    return msgs


def wire_bytes_of(mods):
    """Module-level bytes constants (gen A answers with raw b"trans_done" / b"trans_error")."""
    out = []
    for rel, mod in mods:
        for n in mod.body:
            if (isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                    and isinstance(n.value.value, bytes)):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        out.append({"name": t.id, "value": n.value.value.decode("latin-1"),
                                    "file": rel})
    return out


# --- envs.py, kv_load_failure_policy, metrics ---------------------------------------------

def envs_of(tree):
    mod = parse(tree, "vllm/envs.py")
    if mod is None:
        return None
    out = {}
    for n in ast.walk(mod):
        if isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                name = const_str(k) if k is not None else None
                if not name or not name.startswith("VLLM_MOONCAKE_"):
                    continue
                default, conv = None, None
                for c in ast.walk(v):
                    if isinstance(c, ast.Call) and src_of(c.func) in (
                            "os.getenv", "os.environ.get", "getenv") and len(c.args) >= 2:
                        default = c.args[1].value if isinstance(c.args[1], ast.Constant) \
                            else src_of(c.args[1])
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and \
                            c.func.id in ("int", "float", "bool", "str"):
                        conv = conv or c.func.id
                out[name] = {"name": name, "default": None if default is None else str(default),
                             "type": conv or "str"}
    return sorted(out.values(), key=lambda e: e["name"])


def policy_of(tree):
    rels = ["vllm/config/kv_transfer.py", "vllm/config/__init__.py", "vllm/config.py"]
    for rel in rels:
        mod = parse(tree, rel)
        if mod is None:
            continue
        for n in ast.walk(mod):
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and \
                    n.target.id == "kv_load_failure_policy" and n.value is not None:
                return {"default": const_str(n.value) or src_of(n.value), "file": rel,
                        "type": src_of(n.annotation)}
    return None


def labels_of(node, fn_assigns):
    if isinstance(node, (ast.List, ast.Tuple)):
        vals = [const_str(e) for e in node.elts]
        return vals if None not in vals else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = labels_of(node.left, fn_assigns), labels_of(node.right, fn_assigns)
        return a + b if a is not None and b is not None else None
    if isinstance(node, ast.Name) and node.id in fn_assigns:
        return labels_of(fn_assigns[node.id], {})
    return None


def metrics_in(mod, rel):
    out = []
    for fn in [mod] + [f for f in ast.walk(mod) if isinstance(f, ast.FunctionDef)]:
        assigns = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], ast.Name):
                assigns.setdefault(n.targets[0].id, n.value)
        for n in ast.walk(fn):
            if not isinstance(n, ast.Call):
                continue
            kw = {k.arg: k.value for k in n.keywords if k.arg}
            name = const_str(kw.get("name"))
            if name is None and n.args:
                name = const_str(n.args[0])
            if not name or not name.startswith("vllm:"):
                continue
            labels = None
            if "labelnames" in kw:
                labels = labels_of(kw["labelnames"], assigns)
            elif len(n.args) >= 3:
                labels = labels_of(n.args[2], assigns)
            kind = src_of(n.func).split(".")[-1]
            out.append({"name": name, "labels": labels, "kind": kind, "file": rel})
    return out


def metrics_of(tree, conn_files):
    rels = list(conn_files) + tree.listdir("vllm/v1/metrics") + \
        tree.listdir("vllm/distributed/kv_transfer/kv_connector/v1")
    seen, out = set(), []
    for rel in dict.fromkeys(rels):
        mod = parse(tree, rel)
        if mod is None:
            continue
        for m in metrics_in(mod, rel):
            if m["name"] in seen:
                continue
            seen.add(m["name"])
            out.append(m)
    return sorted(out, key=lambda m: m["name"])


def extract(path):
    tree = Tree(path)
    version, vfrom = version_of(tree)
    layout, files = connector_files(tree)
    res = {"root": os.path.abspath(path), "kind": tree.kind, "version": version,
           "version_from": vfrom}
    if layout is None:
        v0 = tree.read(V0_PIPE) is not None
        raise Fail("no_connector", "vLLM %s has no MooncakeConnector (no %s/ nor %s)%s"
                   % (version or "(version unknown)", CONN_DIR, CONN_SINGLE,
                      "; it has the V0 MooncakePipe" if v0 else ""),
                   version=version, v0_pipe=v0, kind=tree.kind)
    mods = []
    for rel in files:
        mod = parse(tree, rel)
        if mod is not None:
            mods.append(follow_shim(tree, rel, mod))
    known, structs = {}, []
    for rel, mod in mods:
        structs.extend(structs_of(mod, rel, known))
    res["connector"] = {"layout": layout, "files": [r for r, _ in mods]}
    res["structs"] = structs
    res["routes"] = routes_of(mods)
    res["sockets"] = sockets_of(mods)
    res["env"] = envs_of(tree)
    res["extra_config"] = extra_keys_of(mods)
    res["kv_load_failure_policy"] = policy_of(tree)
    res["metrics"] = metrics_of(tree, [r for r, _ in mods])
    res["err_msgs"] = err_msgs_of(mods)
    res["wire_bytes"] = wire_bytes_of(mods)
    return res


def main(argv):
    if len(argv) != 3 or argv[1] != "--root":
        print(__doc__, file=sys.stderr)
        return 2
    try:
        out = extract(argv[2])
    except Fail as e:
        out = dict({"error": e.text, "code": e.code}, **e.extra)
        print(json.dumps(out))
        return 2
    except RecursionError:
        print(json.dumps({"error": "%s: a file nests too deeply to read" % argv[2],
                          "code": "not_vllm"}))
        return 2
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

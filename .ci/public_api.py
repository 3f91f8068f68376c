#!/usr/bin/env python3
"""The public API of every publishable crate, as a listing generated from the code.

    .ci/public_api.py --write     regenerates api/<crate>.txt
    .ci/public_api.py --check     fails (with the diff) when the code and the listing disagree,
                                  or when a crate's features are not additive
    .ci/public_api.py --count     prints types, functions, methods and traits per crate

The listing is rendered from rustdoc's JSON (built with `RUSTC_BOOTSTRAP=1` and
`--output-format json` on the pinned stable toolchain, in target/api): every public item
reachable from the crate's root, with its signature, every field and variant, every trait
implemented (auto traits included: `Send` and `Sync` are part of a type's contract; blanket
implementations left out), `#[non_exhaustive]` where it is. One line per item, sorted, so that
every change to the surface is a visible diff of the committed files.

Each crate is listed with all its features. Additivity: the listing with the default features
must be contained in the listing with all of them (enabling a feature only adds to the API).
"""
import argparse
import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API_DIR = ROOT / "api"
TARGET = ROOT / "target" / "api"


def publishable():
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    meta = json.loads(out)
    crates = []
    for package in meta["packages"]:
        publish = package.get("publish")
        if publish is None or len(publish) > 0:
            crates.append((package["name"], sorted(package.get("features", {}).keys())))
    return crates


def rustdoc_json(crate, all_features):
    target = TARGET / ("all" if all_features else "default")
    cmd = ["cargo", "doc", "--no-deps", "--quiet", "-p", crate, "--target-dir", str(target)]
    if all_features:
        cmd.append("--all-features")
    env = dict(os.environ)
    env["RUSTC_BOOTSTRAP"] = "1"
    env["RUSTDOCFLAGS"] = "-Z unstable-options --output-format json --cfg docsrs"
    env.pop("RUSTFLAGS", None)
    subprocess.run(cmd, cwd=ROOT, check=True, env=env)
    path = target / "doc" / (crate.replace("-", "_") + ".json")
    return json.loads(path.read_text())


class Renderer:
    def __init__(self, doc):
        self.doc = doc
        self.index = doc["index"]
        self.lines = set()
        self.counts = {"types": 0, "functions": 0, "methods": 0, "traits": 0}
        self.seen = set()
        self.type_paths = {}

    # ---- types -------------------------------------------------------------------------
    def ty(self, t):
        if t is None:
            return "()"
        if isinstance(t, str):
            return "_"
        kind, v = next(iter(t.items()))
        if kind == "resolved_path":
            return self.path(v)
        if kind == "dyn_trait":
            parts = [self.poly_trait(p) for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind in ("generic", "primitive"):
            return v
        if kind == "function_pointer":
            sig = v["sig"]
            inputs = ", ".join(self.ty(t) for _, t in sig["inputs"])
            out = "" if sig["output"] is None else " -> " + self.ty(sig["output"])
            return f"fn({inputs}){out}"
        if kind == "tuple":
            inner = ", ".join(self.ty(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if kind == "slice":
            return f"[{self.ty(v)}]"
        if kind == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "infer":
            return "_"
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if kind == "borrowed_ref":
            lt = v["lifetime"] + " " if v.get("lifetime") else ""
            return "&" + lt + ("mut " if v["is_mutable"] else "") + self.ty(v["type"])
        if kind == "qualified_path":
            trait = f" as {self.path(v['trait'])}" if v.get("trait") else ""
            return f"<{self.ty(v['self_type'])}{trait}>::{v['name']}{self.args(v.get('args'))}"
        if kind == "pat":
            return self.ty(v["type"])
        return json.dumps(t)

    def path(self, p):
        name = p["path"]
        if p.get("id") is not None and p["id"] in self.type_paths:
            name = self.type_paths[p["id"]]
        return name + self.args(p.get("args"))

    def args(self, a):
        if not a:
            return ""
        kind, v = next(iter(a.items()))
        if kind == "angle_bracketed":
            parts = []
            for arg in v["args"]:
                k, x = next(iter(arg.items())) if isinstance(arg, dict) else (arg, None)
                if k == "lifetime":
                    parts.append(x)
                elif k == "type":
                    parts.append(self.ty(x))
                elif k == "const":
                    parts.append(x.get("expr", "_"))
                else:
                    parts.append("_")
            for c in v.get("constraints", []):
                binding = c["binding"]
                bk, bv = next(iter(binding.items()))
                if bk == "equality":
                    term = bv.get("type") if isinstance(bv, dict) and "type" in bv else bv
                    parts.append(f"{c['name']}{self.args(c.get('args'))} = {self.ty(term)}")
                else:
                    parts.append(f"{c['name']}: {self.bounds(bv)}")
            return "<" + ", ".join(parts) + ">" if parts else ""
        if kind == "parenthesized":
            inputs = ", ".join(self.ty(t) for t in v["inputs"])
            out = "" if v.get("output") is None else " -> " + self.ty(v["output"])
            return f"({inputs}){out}"
        return ""

    def poly_trait(self, p):
        hr = self.hrtb(p.get("generic_params", []))
        return hr + self.path(p["trait"])

    def hrtb(self, params):
        if not params:
            return ""
        return "for<" + ", ".join(self.param(x) for x in params) + "> "

    def bound(self, b):
        kind, v = next(iter(b.items()))
        if kind == "trait_bound":
            mod = {"maybe": "?", "maybe_const": "~const "}.get(v.get("modifier"), "")
            return self.hrtb(v.get("generic_params", [])) + mod + self.path(v["trait"])
        if kind == "outlives":
            return v
        if kind == "use":
            return "use<" + ", ".join(str(x) for x in v) + ">"
        return json.dumps(b)

    def bounds(self, bs):
        return " + ".join(self.bound(b) for b in bs)

    def param(self, p):
        kind, v = next(iter(p["kind"].items()))
        if kind == "lifetime":
            out = v.get("outlives") or []
            return p["name"] + (": " + " + ".join(out) if out else "")
        if kind == "type":
            s = p["name"]
            if v.get("bounds"):
                s += ": " + self.bounds(v["bounds"])
            if v.get("default") is not None:
                s += " = " + self.ty(v["default"])
            return s
        if kind == "const":
            s = f"const {p['name']}: {self.ty(v['type'])}"
            if v.get("default") is not None:
                s += " = " + str(v["default"])
            return s
        return p["name"]

    def generics(self, g):
        params = [p for p in g["params"]
                  if not (p["kind"].get("type") or {}).get("is_synthetic", False)]
        return "<" + ", ".join(self.param(p) for p in params) + ">" if params else ""

    def where(self, g):
        preds = []
        for w in g.get("where_predicates", []):
            kind, v = next(iter(w.items()))
            if kind == "bound_predicate":
                preds.append(self.hrtb(v.get("generic_params", [])) + self.ty(v["type"]) + ": "
                             + self.bounds(v["bounds"]))
            elif kind == "lifetime_predicate":
                preds.append(v["lifetime"] + ": " + " + ".join(v["outlives"]))
            elif kind == "eq_predicate":
                preds.append(self.ty(v["lhs"]) + " = " + self.ty(v["rhs"].get("type", v["rhs"])))
        return " where " + ", ".join(preds) if preds else ""

    # ---- items -------------------------------------------------------------------------
    def attrs(self, item):
        marks = []
        for a in item.get("attrs", []):
            text = a if isinstance(a, str) else json.dumps(a)
            if "non_exhaustive" in text:
                marks.append("#[non_exhaustive] ")
        return "".join(marks)

    def function(self, item, path, is_method):
        f = item["inner"]["function"]
        h = f["header"]
        quals = ("const " if h["is_const"] else "") + ("async " if h["is_async"] else "") + \
            ("unsafe " if h["is_unsafe"] else "")
        inputs = []
        for name, t in f["sig"]["inputs"]:
            if name == "self":
                if t == {"generic": "Self"}:
                    inputs.append("self")
                    continue
                if "borrowed_ref" in t and t["borrowed_ref"]["type"] == {"generic": "Self"}:
                    r = t["borrowed_ref"]
                    lt = r["lifetime"] + " " if r.get("lifetime") else ""
                    inputs.append("&" + lt + ("mut " if r["is_mutable"] else "") + "self")
                    continue
            inputs.append(f"{name}: {self.ty(t)}")
        out = "" if f["sig"]["output"] is None else " -> " + self.ty(f["sig"]["output"])
        g = f["generics"]
        self.lines.add(f"pub {quals}fn {path}{self.generics(g)}({', '.join(inputs)}){out}"
                       f"{self.where(g)}")
        self.counts["methods" if is_method else "functions"] += 1

    def assoc(self, item, path, in_trait):
        inner = item["inner"]
        kind = next(iter(inner))
        if kind == "function":
            self.function(item, path, True)
        elif kind == "assoc_type":
            v = inner[kind]
            bounds = ": " + self.bounds(v["bounds"]) if v.get("bounds") else ""
            val = " = " + self.ty(v["type"]) if v.get("type") is not None else ""
            self.lines.add(f"pub type {path}{self.generics(v['generics'])}{bounds}{val}")
        elif kind == "assoc_const":
            v = inner[kind]
            self.lines.add(f"pub const {path}: {self.ty(v['type'])}")

    def impl_block(self, impl_id, type_path):
        impl = self.index.get(str(impl_id))
        if impl is None:
            return
        v = impl["inner"]["impl"]
        if v.get("blanket_impl") is not None:
            return
        g = v["generics"]
        for_ty = self.ty(v["for"])
        if v.get("trait") is None:
            for item_id in v["items"]:
                item = self.index.get(str(item_id))
                if item is None or item["visibility"] != "public":
                    continue
                self.assoc(item, f"{for_ty}::{item['name']}", False)
            return
        neg = "!" if v.get("is_negative") else ""
        unsafe = "unsafe " if v.get("is_unsafe") else ""
        self.lines.add(f"{unsafe}impl{self.generics(g)} {neg}{self.path(v['trait'])} for "
                       f"{for_ty}{self.where(g)}")

    def item(self, item_id, path):
        key = (item_id, path)
        if key in self.seen:
            return
        self.seen.add(key)
        item = self.index.get(str(item_id))
        if item is None:
            return
        inner = item["inner"]
        kind = next(iter(inner))
        v = inner[kind]
        attrs = self.attrs(item)
        if kind == "module":
            self.lines.add(f"pub mod {path}")
            for child in v["items"]:
                self.child(child, path)
        elif kind == "struct":
            self.counts["types"] += 1
            g = v["generics"]
            self.lines.add(f"{attrs}pub struct {path}{self.generics(g)}{self.where(g)}")
            sk, sv = next(iter(v["kind"].items())) if isinstance(v["kind"], dict) else (v["kind"], None)
            if sk == "plain":
                for fid in sv["fields"]:
                    f = self.index.get(str(fid))
                    if f and f["visibility"] == "public":
                        self.lines.add(f"pub {path}::{f['name']}: {self.ty(f['inner']['struct_field'])}")
            elif sk == "tuple":
                for n, fid in enumerate(sv):
                    f = self.index.get(str(fid)) if fid is not None else None
                    if f and f["visibility"] == "public":
                        self.lines.add(f"pub {path}::{n}: {self.ty(f['inner']['struct_field'])}")
            for impl in v["impls"]:
                self.impl_block(impl, path)
        elif kind == "enum":
            self.counts["types"] += 1
            g = v["generics"]
            self.lines.add(f"{attrs}pub enum {path}{self.generics(g)}{self.where(g)}")
            for vid in v["variants"]:
                var = self.index[str(vid)]
                vattrs = self.attrs(var)
                vk = var["inner"]["variant"]["kind"]
                vk_kind, vk_v = next(iter(vk.items())) if isinstance(vk, dict) else (vk, None)
                if vk_kind == "struct":
                    fields = [self.index[str(fid)] for fid in vk_v["fields"]]
                    body = " { " + ", ".join(f"{f['name']}: {self.ty(f['inner']['struct_field'])}"
                                             for f in fields) + " }"
                elif vk_kind == "tuple":
                    fields = [self.index[str(fid)] for fid in vk_v if fid is not None]
                    body = "(" + ", ".join(self.ty(f["inner"]["struct_field"]) for f in fields) + ")"
                else:
                    body = ""
                self.lines.add(f"{vattrs}pub {path}::{var['name']}{body}")
            for impl in v["impls"]:
                self.impl_block(impl, path)
        elif kind == "union":
            self.counts["types"] += 1
            self.lines.add(f"pub union {path}{self.generics(v['generics'])}")
            for impl in v["impls"]:
                self.impl_block(impl, path)
        elif kind == "trait":
            self.counts["traits"] += 1
            g = v["generics"]
            bounds = ": " + self.bounds(v["bounds"]) if v.get("bounds") else ""
            unsafe = "unsafe " if v.get("is_unsafe") else ""
            self.lines.add(f"pub {unsafe}trait {path}{self.generics(g)}{bounds}{self.where(g)}")
            for tid in v["items"]:
                t = self.index.get(str(tid))
                if t:
                    self.assoc(t, f"{path}::{t['name']}", True)
            for impl in v.get("implementations", []):
                self.impl_block(impl, path)
        elif kind == "function":
            self.function(item, path, False)
        elif kind == "type_alias":
            self.counts["types"] += 1
            g = v["generics"]
            self.lines.add(f"pub type {path}{self.generics(g)} = {self.ty(v['type'])}")
        elif kind == "constant":
            self.lines.add(f"pub const {path}: {self.ty(v['type'])}")
        elif kind == "static":
            self.lines.add(f"pub static {path}: {self.ty(v['type'])}")
        elif kind in ("macro", "proc_macro"):
            self.lines.add(f"pub macro {path}!")

    def child(self, child_id, prefix):
        item = self.index.get(str(child_id))
        if item is None or item["visibility"] != "public":
            return
        inner = item["inner"]
        kind = next(iter(inner))
        if kind == "use":
            u = inner["use"]
            target = u.get("id")
            if u.get("is_glob"):
                t = self.index.get(str(target)) if target is not None else None
                if t and "module" in t["inner"]:
                    for c in t["inner"]["module"]["items"]:
                        self.child(c, prefix)
                else:
                    self.lines.add(f"pub use {prefix}::{u['source']}::*")
                return
            name = u["name"]
            if target is None or str(target) not in self.index:
                self.lines.add(f"pub use {prefix}::{name} = {u['source']}")
                return
            self.item(target, f"{prefix}::{name}")
            return
        self.item(child_id, f"{prefix}::{item['name']}")

    def name_types(self, root_id, prefix):
        """First pass: the public path of every type, for rendering references to it."""
        stack = [(root_id, prefix)]
        seen = set()
        while stack:
            mid, pre = stack.pop()
            if mid in seen:
                continue
            seen.add(mid)
            module = self.index.get(str(mid))
            if module is None or "module" not in module["inner"]:
                continue
            for c in module["inner"]["module"]["items"]:
                item = self.index.get(str(c))
                if item is None or item["visibility"] != "public":
                    continue
                kind = next(iter(item["inner"]))
                target, name = c, item["name"]
                if kind == "use":
                    u = item["inner"]["use"]
                    if u.get("is_glob") or u.get("id") is None:
                        if u.get("is_glob") and u.get("id") is not None:
                            stack.append((u["id"], pre))
                        continue
                    target, name = u["id"], u["name"]
                t = self.index.get(str(target))
                if t is None:
                    continue
                tk = next(iter(t["inner"]))
                if tk == "module":
                    stack.append((target, f"{pre}::{name}"))
                elif tk in ("struct", "enum", "union", "trait", "type_alias"):
                    self.type_paths.setdefault(target, f"{pre}::{name}")

    def render(self, crate):
        root = self.doc["root"]
        name = crate.replace("-", "_")
        self.name_types(root, name)
        for child in self.index[str(root)]["inner"]["module"]["items"]:
            self.child(child, name)
        return sorted(self.lines)


def listing(crate, all_features):
    r = Renderer(rustdoc_json(crate, all_features))
    lines = r.render(crate)
    return lines, r.counts


def main():
    ap = argparse.ArgumentParser()
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--count", action="store_true")
    ap.add_argument("crates", nargs="*")
    args = ap.parse_args()
    crates = publishable()
    if args.crates:
        crates = [c for c in crates if c[0] in args.crates]
    API_DIR.mkdir(exist_ok=True)
    failed = False
    totals = {"types": 0, "functions": 0, "methods": 0, "traits": 0}
    for crate, features in crates:
        lines, counts = listing(crate, True)
        for k in totals:
            totals[k] += counts[k]
        text = f"# The public API of {crate}, with all its features: generated by .ci/public_api.py\n" \
            + "\n".join(lines) + "\n"
        path = API_DIR / f"{crate}.txt"
        if args.count:
            print(f"{crate}: {counts['types']} types, {counts['functions']} functions, "
                  f"{counts['methods']} methods, {counts['traits']} traits")
            continue
        if args.write:
            path.write_text(text)
            print(f"public_api: wrote {path.relative_to(ROOT)} ({len(lines)} lines)")
        else:
            old = path.read_text() if path.exists() else ""
            if old != text:
                failed = True
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True),
                    f"api/{crate}.txt (committed)", f"api/{crate}.txt (the code)"))
                print(f"public_api: {crate}'s public API differs from api/{crate}.txt; "
                      f"run .ci/public_api.py --write and commit the change", file=sys.stderr)
        non_default = [f for f in features if f != "default"]
        if non_default:
            default_lines, _ = listing(crate, False)
            missing = sorted(set(default_lines) - set(lines))
            if missing:
                failed = True
                print(f"public_api: {crate}'s features are not additive: with its default "
                      f"features it has what all its features take away:", file=sys.stderr)
                for line in missing:
                    print(f"  {line}", file=sys.stderr)
            else:
                print(f"public_api: {crate}: features additive (default {len(default_lines)} "
                      f"lines within all-features {len(lines)})")
    if args.count:
        print(f"total: {totals['types']} types, {totals['functions']} functions, "
              f"{totals['methods']} methods, {totals['traits']} traits")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

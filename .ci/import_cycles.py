#!/usr/bin/env python3
"""Fails if sibling modules of a crate import each other in a circle, of any length, at any depth.

For each crate under crates/ (and loom-tests/), every folder of src/ is looked at on its own:
its child modules (a file `x.rs`, or a folder `x/` with everything in it) are the nodes, and a
child that names a path into another child of the same folder has an edge to it. Paths are read
from `use` items (brace groups expanded) and from paths written in code, outside comments:
`crate::a::b`, `super::x` (`super::super::x` too) and `self::x`, each resolved from the module
of the file it is written in. A circle among siblings (two of them, or three, or more) is a sign
that a shared private type wants to live in their parent, or that one concept is split across
files. Within a folder, a child may use its parent (`mod.rs`) and the parent its children: that
is not a circle.

Run with: python3 .ci/import_cycles.py
          python3 .ci/import_cycles.py --self-test   (proves it finds a circle of three files
                                                      inside a folder, and a pair at the top)
"""

import os
import re
import sys
import tempfile

PATH = re.compile(r"\b(crate|super|self)((?:\s*::\s*\w+)+)")
USE = re.compile(r"\buse\s+([^;]*);", re.S)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.split("\n"))


def without_tests(text):
    return text.split("#[cfg(test)]\nmod tests")[0]


def expand_use(tree):
    """`a::{b, c::{d, e as f}}` -> [["a","b"], ["a","c","d"], ["a","c","e"]]."""
    tree = re.sub(r"\s*(::|\{|\}|,)\s*", r"\1", " ".join(tree.split()))
    out = []

    def walk(prefix, text):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for part in parts:
            if not part:
                continue
            if "{" in part:
                head, _, rest = part.partition("{")
                head = [segment for segment in head.split("::") if segment]
                walk(prefix + head, rest[: rest.rindex("}")])
            else:
                part = part.split(" as ")[0]
                out.append(prefix + [segment for segment in part.split("::") if segment])

    walk([], tree)
    return out


def resolve(module, segments):
    """The absolute module path (a list) that `segments` names, seen from `module`."""
    if not segments:
        return None
    if segments[0] == "crate":
        return segments[1:]
    if segments[0] == "self":
        return module + segments[1:]
    if segments[0] == "super":
        here = module
        rest = segments
        while rest and rest[0] == "super":
            if not here:
                return None
            here = here[:-1]
            rest = rest[1:]
        return here + rest
    return None


def module_of(src, path):
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return rel


def references(src, path):
    """Every absolute module path the file names."""
    text = strip_comments(without_tests(open(path, encoding="utf-8").read()))
    module = module_of(src, path)
    found = []
    for tree in USE.findall(text):
        tree = tree.strip()
        if tree.count("{") != tree.count("}") or not re.fullmatch(r"[\w\s:{},*]+", tree.replace(" as ", " ")):
            continue  # not a use tree: a word "use" in a string or a macro
        for segments in expand_use(tree):
            if segments and segments[0] in ("crate", "super", "self"):
                found.append(resolve(module, segments))
    for head, tail in PATH.findall(text):
        segments = [head] + [s for s in re.split(r"\s*::\s*", tail) if s]
        found.append(resolve(module, segments))
    # `pub use` re-exports of a parent are its own business, not an edge of a child.
    return [f for f in found if f]


def folders(src):
    for folder, _, _ in os.walk(src):
        yield folder


def children(folder):
    found = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".rs") and name not in ("lib.rs", "main.rs", "mod.rs"):
            found[name[:-3]] = [path]
        elif os.path.isdir(path):
            found[name] = [
                os.path.join(inner, file)
                for inner, _, files in os.walk(path)
                for file in files
                if file.endswith(".rs")
            ]
    return found


def circles(graph):
    found = set()
    for start in graph:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    found.add(tuple(path))
                elif nxt not in path and nxt > start:
                    stack.append((nxt, path + [nxt]))
    return sorted(found)


def crate_circles(src):
    """[(folder module path, [siblings in circle order])]."""
    result = []
    for folder in folders(src):
        kids = children(folder)
        if len(kids) < 2:
            continue
        here = os.path.relpath(folder, src)
        here = [] if here == "." else here.split(os.sep)
        graph = {name: set() for name in kids}
        for name, files in kids.items():
            for path in files:
                for target in references(src, path):
                    if len(target) > len(here) and target[: len(here)] == here:
                        other = target[len(here)]
                        if other != name and other in kids:
                            graph[name].add(other)
        for circle in circles(graph):
            result.append((here, list(circle)))
    return result


def roots():
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    crates = os.path.join(top, "crates")
    for crate in sorted(os.listdir(crates)):
        yield crate, os.path.join(crates, crate, "src")
    yield "loom-tests", os.path.join(top, "loom-tests", "src")


def report(name, src):
    failed = False
    for here, circle in crate_circles(src):
        where = "src/" + "/".join(here) + ("/" if here else "")
        print(
            f"{name}: modules of {where} import each other in a circle: "
            + " -> ".join(circle + [circle[0]])
        )
        failed = True
    return failed


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        os.makedirs(os.path.join(src, "native"))
        files = {
            "lib.rs": "mod native;\nmod a;\nmod b;\n",
            "a.rs": "use crate::b::Thing;\n",
            "b.rs": "pub(crate) fn f() { crate::a::g(); }\n",
            "native/mod.rs": "mod handle;\nmod timeout;\nmod cancel_when;\npub use handle::T;\n",
            "native/handle.rs": "use super::{timeout::Timeout};\n",
            "native/timeout.rs": "use super::cancel_when::fire;\n",
            "native/cancel_when.rs": "// fn x() -> super::handle::T { todo!() }\n/* use super::handle::T; */\n",
        }
        for rel, text in files.items():
            with open(os.path.join(src, rel), "w", encoding="utf-8") as f:
                f.write(text)
        found = crate_circles(src)
        got = {(tuple(h), tuple(sorted(c))) for h, c in found}
        assert ((), ("a", "b")) in got, got
        three = [c for h, c in found if h == ["native"] and len(c) == 3]
        assert not three, f"the commented-out import made a circle: {found}"
        # Now the comment becomes code: a circle of three.
        with open(os.path.join(src, "native/cancel_when.rs"), "w", encoding="utf-8") as f:
            f.write("fn x() -> super::handle::T { todo!() }\n")
        found = crate_circles(src)
        three = [sorted(c) for h, c in found if h == ["native"] and len(c) == 3]
        assert three == [["cancel_when", "handle", "timeout"]], found
    print("self-test: a pair at the top and a circle of three in a folder are found")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    failed = False
    for name, src in roots():
        if os.path.isdir(src):
            failed |= report(name, src)
    if failed:
        sys.exit(1)
    print("no import circle between sibling modules, at any depth")


main()

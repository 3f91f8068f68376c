#!/usr/bin/env python3
"""Fails if two or more sibling modules of a crate import each other in a circle.

For each crate under crates/, the top-level modules of src/ (a file `x.rs`, or a folder `x/`
with everything in it) are the nodes; a module that names `crate::y` in a `use` or a path
outside comments has an edge to `y`. A circle among siblings is a sign that a shared private
type wants to live in a parent module, or one concept is split across files. Within a folder,
a child may use its parent and the parent its children: that is not a sibling circle.

Run with: python3 .ci/import_cycles.py
"""

import os
import re
import sys


def modules(src):
    found = {}
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if name.endswith(".rs") and name not in ("lib.rs", "main.rs"):
            found[name[:-3]] = [path]
        elif os.path.isdir(path):
            found[name] = [
                os.path.join(folder, file)
                for folder, _, files in os.walk(path)
                for file in files
                if file.endswith(".rs")
            ]
    return found


def edges(mods):
    graph = {name: set() for name in mods}
    for name, files in mods.items():
        for path in files:
            text = open(path, encoding="utf-8").read()
            text = text.split("#[cfg(test)]\nmod tests")[0]
            code = "\n".join(
                line for line in text.split("\n") if not line.strip().startswith("//")
            )
            for used in re.findall(r"crate::(\w+)", code):
                if used != name and used in mods:
                    graph[name].add(used)
    return graph


def circles(graph):
    found = set()
    for start in graph:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    found.add(tuple(sorted(path)))
                elif nxt not in path:
                    stack.append((nxt, path + [nxt]))
    return sorted(found)


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
    failed = False
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, "src")
        if not os.path.isdir(src):
            continue
        for circle in circles(edges(modules(src))):
            print(f"{crate}: modules import each other in a circle: {', '.join(circle)}")
            failed = True
    if failed:
        sys.exit(1)
    print("no import circle between sibling modules")


main()

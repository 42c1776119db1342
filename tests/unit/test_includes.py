#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""No import circle among the modules of src/ and include/ (make check; issue 32, item 2).

A module is a stem: src/report.c and src/report.h are the module "report"; a private header
X_int.h belongs to module X (src/recfile_int.h is "recfile"); include/ntbpf.h is "ntbpf". Each
`#include "..."` line of src/*.c, src/*.h and include/*.h that names a header of src/ or include/
is an edge from the including file's module to the header's module. The graph must have no
cycle: a lower module never includes a higher one's header, so each layer can be read, tested
and changed below the ones that use it. Generated headers (*.skel.h) and paths outside src/ and
include/ are not modules and are ignored.

On a cycle this prints each one, an edge a line with the file and line that makes it, and exits 1.

usage: tests/unit/test_includes.py [TOP]   (default: the current directory)
"""
import glob
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem[:-4] if stem.endswith("_int") else stem


def graph(top):
    """{module: {module: "file:line"}} from the include lines."""
    files = sorted(glob.glob(os.path.join(top, "src", "*.[ch]")) +
                   glob.glob(os.path.join(top, "include", "*.h")))
    headers = {os.path.basename(f) for f in files if f.endswith(".h")}
    edges = {}
    for f in files:
        m = module_of(f)
        edges.setdefault(m, {})
        with open(f, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                inc = INCLUDE_RE.match(line)
                if not inc or "/" in inc.group(1) or inc.group(1) not in headers:
                    continue
                to = module_of(inc.group(1))
                if to != m:
                    edges[m].setdefault(to, f"{os.path.relpath(f, top)}:{n}")
    return edges


def cycles(edges):
    """Per strongly connected component of more than one module (Tarjan's algorithm): one
    cycle in it (a list of modules, first == last) and all its modules."""
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(set(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    out = []
    for comp in sccs:
        # the shortest way back to the component's first module (breadth first, inside it)
        start = min(comp)
        prev, todo, back = {start: None}, [start], None
        while todo and back is None:
            nxt = []
            for v in todo:
                for w in sorted(edges[v]):
                    if w == start:
                        back = v
                        break
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if back is not None:
                    break
            todo = nxt
        path, v = [], back
        while v is not None:
            path.append(v)
            v = prev[v]
        out.append((path[::-1] + [start], sorted(comp)))  # start -> ... -> back -> start
    return out


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    edges = graph(top)
    if not edges:
        print(f"test_includes: no sources under {top}/src", file=sys.stderr)
        return 1
    found = cycles(edges)
    for cyc, comp in found:
        print("import circle: " + " -> ".join(cyc), file=sys.stderr)
        if len(comp) > len(cyc) - 1:
            print("  (one of the circles among: " + ", ".join(comp) + ")", file=sys.stderr)
        for a, b in zip(cyc, cyc[1:]):
            print(f"  {a} -> {b}: {edges[a][b]}", file=sys.stderr)
    if found:
        print(f"test_includes: {len(found)} circle(s); move what the lower module needs "
              "below it (docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"test_includes: {len(edges)} modules, no import circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())

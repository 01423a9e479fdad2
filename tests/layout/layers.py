#!/usr/bin/env python3
"""layers.py - the shape of src/ as a test: the stages and the one way
their dependencies run.

  layers.py SRC_DIR [BUILD_DIR]

Checks that no .c file sits directly in src/; that every include of another
stage goes down the pipeline (ALLOWED below, the README's layout); that no
two files include each other, directly or round a longer loop; and, given
the build directory, that no two object files of the memtrace binary call
each other (round a loop), read from the symbols the stage libraries define
and use (nm).  Prints every violation; exits 1 if there is one.
"""
import os
import re
import subprocess
import sys

# stage -> the stages its files may include or call
ALLOWED = {
    'base': set(),
    'format': {'base'},
    'capture/shim': {'format', 'base'},
    'capture/bpf': {'format', 'base'},
    'scan': {'capture/bpf', 'format', 'base'},
    'analyse': {'format', 'base'},
    'query': {'analyse', 'format', 'base'},
    'collect': {'scan', 'capture/bpf', 'format', 'base'},
    'stream': {'format', 'base'},
    'watch': {'collect', 'scan', 'capture/bpf', 'analyse', 'format', 'base'},
    'report': {'analyse', 'format', 'base'},
    'export': {'report', 'analyse', 'format', 'base'},
    'server': {'export', 'report', 'query', 'analyse', 'format', 'base'},
    'cli': {'watch', 'stream', 'collect', 'scan', 'capture/bpf', 'report', 'export', 'server', 'query',
            'analyse', 'format', 'base'},
}
GENERATED = {'config.h', 'memtrace.skel.h', 'memtrace.h'}


def stage_of(rel):
    """The stage of a path relative to src/ ('export/web/web.h' -> 'export')."""
    parts = rel.split('/')
    if parts[0] == 'capture' and len(parts) > 2:
        return 'capture/' + parts[1]
    return parts[0] if len(parts) > 1 else None


def sources(src):
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith(('.c', '.h', '.cpp')):
                yield os.path.relpath(os.path.join(d, f), src)


def find_cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def check_includes(src, bad):
    graph = {}
    for rel in sources(src):
        if '/' not in rel and rel.endswith('.c'):
            bad.append('%s: a .c file directly in src/' % rel)
        here = os.path.dirname(rel)
        for m in re.finditer(r'^#include "([^"]+)"', open(os.path.join(src, rel)).read(), re.M):
            name = m.group(1)
            if name in GENERATED:
                continue
            target = os.path.normpath(os.path.join(here, name))
            if not os.path.exists(os.path.join(src, target)):
                target = name  # named from src/
            if not os.path.exists(os.path.join(src, target)):
                bad.append('%s: includes %s, which is not in src/' % (rel, name))
                continue
            graph.setdefault(rel, set()).add(target)
            a, b = stage_of(rel), stage_of(target)
            if a != b:
                if b not in ALLOWED.get(a, set()):
                    bad.append('%s (%s) includes %s (%s): against the pipeline' % (rel, a, target, b))
                elif '/' not in name:
                    bad.append('%s includes %s without naming its stage' % (rel, name))
    for comp in find_cycles(graph):
        bad.append('include cycle: ' + ' <-> '.join(comp))


def check_calls(build, bad):
    """Which object defines each global symbol, and which objects use it."""
    # (stage, archive or object) for the binary's libraries and the shim's
    # objects; the shim's copies of format/ are left out (the same files).
    inputs = []
    for d, _, fs in os.walk(os.path.join(build, 'src')):
        inputs += [(os.path.relpath(d, os.path.join(build, 'src')), os.path.join(d, f))
                   for f in fs if f.startswith('libmt-') and f.endswith('.a')
                   and 'shim' not in f and 'unwind' not in f]
    call_graph(inputs, bad)
    # The shim is a binary of its own (it defines malloc & co.).
    shim_objs = os.path.join(build, 'libmemtrace-preload.so.p')
    if os.path.isdir(shim_objs):
        call_graph([('capture/shim', os.path.join(shim_objs, f)) for f in os.listdir(shim_objs)
                    if f.endswith('.c.o')], bad)


def call_graph(inputs, bad):
    defs, uses = {}, []
    for stage, path in inputs:
        out = subprocess.run(['nm', '-A', path], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            m = re.match(r'(.*?):\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$', line)
            if not m:
                continue
            where, kind, sym = m.groups()
            obj = where.split(':')[-1]
            name = re.sub(r'^src_capture_shim_', '', os.path.basename(obj))[:-2]
            node = stage + '/' + name
            if kind in 'TDBR':
                defs[sym] = node
            elif kind == 'U':
                uses.append((node, sym))
    graph = {}
    for node, sym in uses:
        d = defs.get(sym)
        if d and d != node:
            graph.setdefault(node, set()).add(d)
            a, b = node.rsplit('/', 1)[0], d.rsplit('/', 1)[0]
            if a != b and b not in ALLOWED.get(a, set()):
                bad.append('%s calls %s of %s: against the pipeline' % (node, sym, d))
    for comp in find_cycles(graph):
        bad.append('call cycle: ' + ' <-> '.join(comp))


def main():
    src = sys.argv[1]
    bad = []
    check_includes(src, bad)
    if len(sys.argv) > 2:
        check_calls(sys.argv[2], bad)
    for b in bad:
        print(b)
    print('layers: %d violation%s' % (len(bad), '' if len(bad) == 1 else 's'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())

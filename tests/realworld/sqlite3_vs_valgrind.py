#!/usr/bin/env python3
"""tests/realworld/sqlite3_vs_valgrind.py: memtrace against valgrind on a real program.

Runs the deterministic sqlite3 workload of tools/sqlite-workload.sh three
ways (natively, under valgrind's memcheck, under `memtrace record`) and checks
that memtrace's JSON report agrees with valgrind's "total heap usage" and "in
use at exit" lines, and that the call sites carry the right function names.

valgrind runs with --run-libc-freeres=no: by default it calls glibc's
__libc_freeres at exit, which frees glibc's own internal blocks; a profiler
that is not valgrind sees those as still allocated (16 blocks here), so
without the flag the frees and leaks would differ for a reason that is not a
fault of either tool.  What valgrind then counts in use at exit is memtrace's
leaked plus runtime-held blocks (stdio's buffers are the runtime's).

Symbol names: Debian's libsqlite3 is stripped and has no .symtab, but it
exports almost every internal function in .dynsym.  The allocator's direct
caller is the static sqlite3MemMalloc/sqlite3MemRealloc, which has no name
anywhere in the file, so the first frame of sqlite3's sites is rightly
unnamed; its caller (sqlite3Malloc, sqlite3Realloc) is exported.  The test
therefore checks every frame of the top sites against the module's own
symbol tables: a frame inside an exported function must carry that name, and
a frame outside every symbol must not carry one (a symbolizer that falls back
to the nearest preceding symbol would call sqlite3MemMalloc "sqlite3ApiExit").

Needs sqlite3 and valgrind (tools/setup.sh installs them); fails, never
skips, when they are missing.  Environment: MEMTRACE (the memtrace binary),
MEMTRACE_SOURCE_ROOT (for tools/sqlite-workload.sh).
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

TOP_SITES = 20
TOLERANCE = 0.001            # 0.1 %
NAMED_NEAR_LEAF = 0.9        # share of top sites with a name in frames 1-2
REQUIRED_NAMES = ["sqlite3Malloc", "sqlite3Realloc", "sqlite3VdbeMemGrow",
                  "sqlite3StrAccumEnlarge", "sqlite3VdbeExec", "sqlite3_step"]

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def close_enough(ours, ref):
    return abs(ours - ref) <= int(ref * TOLERANCE)


# ---- ELF symbol tables, read directly so the test needs no binutils -------

def elf_symbols(path):
    """Return (functions, has_debug_file): functions is a list of
    (start, end, name) from .symtab and .dynsym, addresses as in the file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return [], False                      # only ELF64 little-endian
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = []
    for i in range(shnum):
        sections.append(struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize))
    shstr_off = sections[shstrndx][4]

    def secname(sec):
        start = shstr_off + sec[0]
        return data[start:data.index(b"\0", start)].decode()

    funcs = []
    build_id = None
    for sec in sections:
        name, stype, _, _, off, size, link, _, _, entsize = sec
        if secname(sec) == ".note.gnu.build-id":
            namesz, descsz, _ = struct.unpack_from("<III", data, off)
            desc = off + 12 + ((namesz + 3) & ~3)
            build_id = data[desc:desc + descsz].hex()
        if stype not in (2, 11) or entsize == 0:   # SHT_SYMTAB, SHT_DYNSYM
            continue
        stroff = sections[link][4]
        for j in range(size // entsize):
            st_name, st_info, _, st_shndx, value, ssize = struct.unpack_from(
                "<IBBHQQ", data, off + j * entsize)
            if (st_info & 0xF) not in (2, 10) or st_shndx == 0 or ssize == 0:
                continue                          # STT_FUNC, STT_GNU_IFUNC
            s = stroff + st_name
            sym = data[s:data.index(b"\0", s)].decode(errors="replace")
            funcs.append((value, value + ssize, sym.split("@")[0]))
    has_debug = bool(build_id) and os.path.exists(
        "/usr/lib/debug/.build-id/%s/%s.debug" % (build_id[:2], build_id[2:]))
    return funcs, has_debug


def covering(funcs, off):
    return {name for start, end, name in funcs if start <= off < end}


def infer_base(funcs, named):
    """Load base of a module from its frames that carry an exported name:
    the page-aligned base for which every such frame falls in its symbol."""
    by_name = {}
    for start, end, name in funcs:
        by_name.setdefault(name, []).append((start, end))
    votes = {}
    usable = 0
    for addr, name in named:
        if name not in by_name:
            continue
        usable += 1
        cands = set()
        for start, end in by_name[name]:
            lo, hi = addr - end + 1, addr - start
            b = (hi // 4096) * 4096
            while b >= lo:
                cands.add(b)
                b -= 4096
        for b in cands:
            votes[b] = votes.get(b, 0) + 1
    if not votes:
        return None, 0, usable
    base = max(votes, key=votes.get)
    return base, votes[base], usable


# ---- the runs ------------------------------------------------------------

def main():
    # --backend=bpf: the same counts through the BPF backend.  Its stacks
    # hold only the immediate caller in code without frame pointers (libsqlite3's
    # is a static function), so only the frames' consistency with the
    # symbol tables is checked, not how many carry names.
    backend = [a for a in sys.argv[1:] if a.startswith("--backend=")]
    bpf = backend == ["--backend=bpf"]
    memtrace = os.environ.get("MEMTRACE")
    root = os.environ.get("MEMTRACE_SOURCE_ROOT",
                          os.path.join(os.path.dirname(__file__), "..", ".."))
    if not memtrace or not os.access(memtrace, os.X_OK):
        die("MEMTRACE does not name the memtrace binary (run through meson test)")
    missing = [p for p in ("sqlite3", "valgrind") if shutil.which(p) is None]
    if missing:
        die("%s not installed: this test needs them as the reference; "
            "run tools/setup.sh (as root) to install them" % " and ".join(missing))

    tmp = tempfile.mkdtemp(prefix="memtrace-realworld-")
    script = os.path.join(tmp, "workload.sql")
    subprocess.run(["sh", os.path.join(root, "tools", "sqlite-workload.sh"),
                    "-o", script], check=True)

    def run(cmd, out_name):
        with open(script, "rb") as stdin, open(os.path.join(tmp, out_name), "wb") as out:
            p = subprocess.run(cmd, stdin=stdin, stdout=out, stderr=subprocess.PIPE)
        with open(os.path.join(tmp, out_name), "rb") as f:
            return p.returncode, f.read(), p.stderr.decode(errors="replace")

    rc, native_out, err = run(["sqlite3", ":memory:"], "native.out")
    if rc != 0:
        die("sqlite3 itself failed (exit %d): %s" % (rc, err.strip()))

    vg_log = os.path.join(tmp, "valgrind.log")
    rc, vg_out, err = run(["valgrind", "--trace-children=no", "--run-libc-freeres=no",
                           "--run-cxx-freeres=no", "--log-file=" + vg_log,
                           "sqlite3", ":memory:"], "valgrind.out")
    log = open(vg_log).read()
    usage = re.search(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated", log)
    in_use = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", log)
    if rc != 0 or not usage or not in_use:
        die("valgrind run failed (exit %d) or printed no heap summary:\n%s" % (rc, log))
    num = lambda s: int(s.replace(",", ""))
    vg = {"allocations": num(usage.group(1)), "frees": num(usage.group(2)),
          "allocated_bytes": num(usage.group(3)),
          "leaked_bytes": num(in_use.group(1)), "leaked_allocations": num(in_use.group(2))}

    recording = os.path.join(tmp, "sqlite3.mtrace")
    rc, mt_out, err = run([memtrace, "record", "-q", "-o", recording] + backend + ["--",
                           "sqlite3", ":memory:"], "memtrace.out")
    if rc != 0:
        die("memtrace record exited %d: %s" % (rc, err.strip()))
    if err.strip():
        fail("memtrace record -q printed on stderr: %s" % err.strip())
    for name, out in (("valgrind", vg_out), ("memtrace", mt_out)):
        if out != native_out:
            fail("sqlite3's output under %s differs from its native output" % name)

    p = subprocess.run([memtrace, "report", "--json", recording],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        die("memtrace report --json exited %d: %s" % (p.returncode, p.stderr.decode().strip()))
    try:
        report = json.loads(p.stdout)
    except ValueError as e:
        die("memtrace report --json printed invalid JSON: %s" % e)
    procs = report.get("processes", [])
    if len(procs) != 1:
        die("expected one process in the report, found %d" % len(procs))
    proc = procs[0]
    totals = proc["totals"]

    # ---- counts ----------------------------------------------------------
    print("%-20s %14s %14s" % ("", "valgrind", "memtrace"))
    # valgrind (without __libc_freeres) counts in use at exit what the C
    # runtime holds until then (stdio's buffers, ...): memtrace counts those
    # apart from the leaks, as runtime_held_*
    held = {"leaked_allocations": "runtime_held_allocations", "leaked_bytes": "runtime_held_bytes"}
    for key in ("allocations", "frees", "allocated_bytes",
                "leaked_allocations", "leaked_bytes"):
        ours = totals.get(key)
        if key in held and ours is not None:
            if totals.get(held[key]) is None:
                fail("totals.%s missing from the report" % held[key])
            ours += totals.get(held[key]) or 0
        print("%-20s %14s %14s" % (key, "{:,}".format(vg[key]),
                                   "{:,}".format(ours) if ours is not None else "missing"))
        if ours is None:
            fail("totals.%s missing from the report" % key)
        elif not close_enough(ours, vg[key]):
            fail("totals.%s = %d, valgrind says %d (%+.3f%%, more than %.1f%% off)"
                 % (key, ours, vg[key], 100.0 * (ours - vg[key]) / max(vg[key], 1),
                    100 * TOLERANCE))
    if proc.get("lost_events") != 0:
        fail("lost_events = %r, expected 0" % proc.get("lost_events"))
    if not proc.get("exe", "").endswith("sqlite3"):
        fail("process exe is %r, expected sqlite3" % proc.get("exe"))
    if proc.get("backend") != ("bpf" if bpf else "preload"):
        fail("backend %r in the report" % proc.get("backend"))

    # ---- symbols of the top sites -----------------------------------------
    sites = sorted(proc.get("sites", []), key=lambda s: -s["allocations"])[:TOP_SITES]
    # (with the caller alone, BPF sees a dozen distinct stacks)
    if len(sites) < (5 if bpf else TOP_SITES):
        fail("only %d sites in the report" % len(sites))
    modules = {}
    for s in sites:
        if not s.get("frames"):
            fail("a site with %d allocations has no frames" % s["allocations"])
        for fr in s.get("frames", []):
            if not fr.get("module") or not fr.get("address"):
                fail("frame without module or address: %r" % fr)
                continue
            if "memtrace" in os.path.basename(fr["module"]):
                fail("memtrace's own frame listed: %r" % fr)
            modules.setdefault(fr["module"], []).append(fr)

    seen_names = set()
    checked = mismatched = 0
    for module, frames in sorted(modules.items()):
        try:
            funcs, has_debug = elf_symbols(module)
        except OSError as e:
            fail("cannot read module %s: %s" % (module, e))
            continue
        named = [(int(fr["address"], 16), fr["function"]) for fr in frames if fr.get("function")]
        seen_names.update(n for _, n in named)
        base, agree, usable = infer_base(funcs, named)
        if base is None:
            if named and not has_debug:
                fail("%s: frames named %s, but the module has no such symbols"
                     % (module, sorted({n for _, n in named})[:5]))
            continue
        if agree != usable and not has_debug:
            fail("%s: named frames disagree on the load address (%d of %d fit 0x%x)"
                 % (module, agree, usable, base))
        exported = {n for _, _, n in funcs}
        for fr in frames:
            addr = int(fr["address"], 16)
            want = covering(funcs, addr - base)
            got = fr.get("function")
            checked += 1
            if want and got not in want:
                ok = has_debug and got  # debug info may name an inlined callee
                if not ok:
                    mismatched += 1
                    fail("%s+0x%x: function %r, the symbol table says %s"
                         % (module, addr - base, got, sorted(want)))
            elif not want and got and got in exported and not has_debug:
                mismatched += 1
                fail("%s+0x%x: function %r, but no symbol covers that address"
                     % (module, addr - base, got))
    print("frames of the top %d sites checked against their modules' symbol tables: "
          "%d, wrong: %d" % (len(sites), checked, mismatched))

    near_leaf = sum(1 for s in sites if any(fr.get("function") for fr in s["frames"][:2]))
    print("top sites naming a function in their first two frames: %d of %d"
          % (near_leaf, len(sites)))
    if not bpf and near_leaf < NAMED_NEAR_LEAF * len(sites):
        fail("only %d of the top %d sites name a function in their first two frames"
             % (near_leaf, len(sites)))
    for name in ([] if bpf else REQUIRED_NAMES):
        if name not in seen_names:
            fail("no frame of the top %d sites is named %s" % (len(sites), name))

    if failures:
        print("%d check(s) failed; files kept in %s" % (len(failures), tmp))
        return 1
    shutil.rmtree(tmp)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

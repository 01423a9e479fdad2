"""A program that loads zlib itself (zlibuser.c) does under memtrace the work
it does alone: the shim needs no libz.so.1 of its own (issue 34), nor
anything but the C library and, where the unwinder is not memtrace's own,
the unwinding libraries.

The count alone is valgrind's "total heap usage" (memcheck's preloads need
no zlib either): memtrace's allocations and bytes must be those.

Usage: zlibuser.py PROG"""
import re
import shutil
import subprocess

# What the shim may need (meson.build of capture/shim): the C library and
# its loader (which defines __stack_chk_guard on AArch64), and the unwinders
# it may be built with (libgcc's on ARMv7 and MIPS, libunwind on AArch64 and
# for ARMv7's frames without .ARM.exidx).
ALLOWED = re.compile(r'libc\.so\.6|ld-linux[-\w.]*\.so\.\d+|ld\.so\.1|libgcc_s\.so\.1|libunwind\.so\.8')


def needed(t, path):
    rc, so, se = t.run(['readelf', '-d', path], what='readelf -d')
    if not t.eq(rc, 0, f'readelf -d {path}: exit status (stderr {se.strip()[-200:]!r})'):
        return None
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', so)


def run(t, prog):
    libs = needed(t, t.shim)
    if libs is not None:
        t.check('libc.so.6' in libs, f'the shim needs the C library ({libs})')
        t.eq([x for x in libs if not ALLOWED.fullmatch(x)], [],
             'libraries the shim needs beyond libc and unwinding')

    rc, alone, se = t.run([prog], what='the program alone')
    t.eq(rc, 0, f'exit status of the program alone (stderr {se.strip()[-200:]!r})')
    t.check('zlib before: no' in alone, f'alone, zlib is not loaded before the program loads it: {alone!r}')
    rec, under = t.record([prog])
    t.eq(under, alone, 'what the program says under memtrace (zlib loaded before it?) and alone')

    vg = shutil.which('valgrind')
    if not t.check(vg, 'valgrind is installed (tools/setup.sh installs it)'):
        return
    p = subprocess.run([vg, prog], capture_output=True, text=True, timeout=300)
    t.eq(p.returncode, 0, f'valgrind exit status (stderr {p.stderr[-400:]!r})')
    m = re.search(r'total heap usage: ([\d,]+) allocs, [\d,]+ frees, ([\d,]+) bytes allocated', p.stderr)
    if not t.check(m, f'valgrind printed its heap summary: {p.stderr[-400:]!r}'):
        return
    want = [int(m.group(1).replace(',', '')), int(m.group(2).replace(',', ''))]
    rep = t.report(rec)
    proc = t.only_process(rep) if rep else None
    if proc is not None:
        tot = proc.get('totals', {})
        t.eq([tot.get('allocations'), tot.get('allocated_bytes')], want,
             'allocations and bytes under memtrace, against valgrind\'s count of the program alone')

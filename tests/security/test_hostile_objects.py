#!/usr/bin/env python3
"""test_hostile_objects.py - an unprivileged user's mapped files cannot crash
or swell root's BPF commands.

The BPF backend compiles the .eh_frame of every file a traced process maps
executable.  Here, in a private temporary directory, a process running as
uid 65534 maps two ELF files built by this test (PROT_READ | PROT_EXEC) and
allocates in a loop:
  - wrap.so: the 56-byte .eh_frame of the issue, whose CIE declares an
    augmentation length near 2^64 (the pointer wrapped and the CFI
    interpreter ran on wild memory: `memtrace -p`, `top` and `sweep` died of
    SIGSEGV);
  - many.so: 160 section headers naming one .eh_frame of 1.2 MB, 400,000
    rows (compiled 160 times, it took -p past 1 GB).
Then root's `memtrace -p PID`, `memtrace top -p PID` and `memtrace sweep`
must each end with status 0, report the process's allocations (-p), and
stay under 400 MB of resident memory.

Last, a program whose RUNPATH names a folder holding a FIFO called
libc.so.6: `record --backend=bpf` looked for the C library there with a
plain open() and hung before the program ran, deaf to ^C.  Now it runs the
program (which the dynamic loader then blocks on the FIFO) and a ^C to the
process group ends both.
"""
import json
import signal
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import bpflib

MEMTRACE = os.environ['MEMTRACE']
NOBODY = 65534
TIMEOUT = 120
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def uleb_wide(v):
    """V as a ULEB128 padded to 10 bytes."""
    out = bytearray()
    for _ in range(9):
        out.append(0x80 | (v & 0x7f))
        v >>= 7
    out.append(v & 0x7f)
    return bytes(out)


def wrap_section():
    """A CIE "z" whose augmentation length is 2^64 - 2^40 (the pointer plus
    it lands a terabyte below), and an FDE using it: 56 bytes."""
    cie = struct.pack('<I', 0) + bytes([1]) + b'z\0' + bytes([1, 0x78, 16]) + uleb_wide(2**64 - 2**40)
    cie += bytes((-(len(cie) + 4)) % 4)
    out = struct.pack('<I', len(cie)) + cie
    fde = struct.pack('<I', len(out) + 4) + struct.pack('<QQ', 0x1000, 0x100) + bytes([0, 0x0e, 16])
    fde += bytes((-(len(fde) + 4)) % 4)
    return out + struct.pack('<I', len(fde)) + fde + struct.pack('<I', 0)


def big_section(nfde, rows):
    """One CIE "zR" (udata4 pointers) and NFDE FDEs of ROWS rows each, the CFA
    offset changing at every byte."""
    cie = struct.pack('<I', 0) + bytes([1]) + b'zR\0' + bytes([1, 0x78, 16, 1, 0x03, 0x0c, 7, 8, 0x90, 1])
    cie += bytes((-(len(cie) + 4)) % 4)
    out = bytearray(struct.pack('<I', len(cie)) + cie)
    body = bytes([0x41, 0x0e, 16, 0x41, 0x0e, 24]) * (rows // 2)
    for i in range(nfde):
        fde = struct.pack('<I', len(out) + 4) + struct.pack('<II', 0x1000 + i * 0x10000, rows)
        fde += b'\0' + body
        fde += bytes((-(len(fde) + 4)) % 4)
        out += struct.pack('<I', len(fde)) + fde
    return bytes(out + struct.pack('<I', 0))


def elf(eh_frame, nhdr):
    """An ELF64 shared object: one PT_LOAD over the whole file, and NHDR
    section headers naming EH_FRAME as .eh_frame."""
    strtab = b'\0.shstrtab\0.eh_frame\0'
    strtab_at = 64 + 56
    eh_at = (strtab_at + len(strtab) + 15) & ~15
    shoff = (eh_at + len(eh_frame) + 15) & ~15
    size = shoff + 64 * (2 + nhdr)
    ident = b'\x7fELF' + bytes([2, 1, 1]) + bytes(9)
    ehdr = ident + struct.pack('<HHIQQQIHHHHHH', 3, 62, 1, 0, 64, shoff, 0, 64, 56, 1, 64, 2 + nhdr, 1)
    phdr = struct.pack('<IIQQQQQQ', 1, 5, 0, 0, 0, size, size, 0x1000)
    shdrs = bytes(64)
    shdrs += struct.pack('<IIQQQQIIQQ', 1, 3, 0, 0, strtab_at, len(strtab), 0, 0, 1, 0)
    sh = struct.pack('<IIQQQQIIQQ', 11, 1, 2, eh_at, eh_at, len(eh_frame), 0, 0, 8, 0)
    shdrs += sh * nhdr
    img = bytearray(ehdr + phdr + strtab)
    img += bytes(eh_at - len(img)) + eh_frame
    img += bytes(shoff - len(img)) + shdrs
    return bytes(img)


MAPPER = r'''
import ctypes, mmap, sys, time
maps = []
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        maps.append(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC,
                              flags=mmap.MAP_PRIVATE))
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
print('mapped', flush=True)
kept = []
while True:
    kept.append(libc.malloc(4000))
    if len(kept) > 1000:
        kept.clear()
    time.sleep(0.002)
'''


def run_root(what, args, top):
    """Runs memtrace ARGS as root and checks its status and peak resident
    memory (its own, from wait4).  Returns (status, stdout, stderr)."""
    out_path, err_path = os.path.join(top, 'out'), os.path.join(top, 'err')
    with open(out_path, 'w') as out, open(err_path, 'w') as err:
        p = subprocess.Popen([MEMTRACE] + args, stdout=out, stderr=err)
    deadline = time.monotonic() + TIMEOUT
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            check(False, f'{what}: ends within {TIMEOUT} s')
            break
        time.sleep(0.1)
    p.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = open(out_path).read(), open(err_path).read()
    mb = ru.ru_maxrss / 1024
    check(p.returncode == 0, f'{what}: exit status 0 (got {p.returncode}): {stderr.strip()[-300:]}')
    check(mb < 400, f'{what}: peak resident memory {mb:.0f} MB < 400 MB')
    return p.returncode, stdout, stderr


def runpath_fifo(top):
    """record --backend=bpf of a program whose RUNPATH holds a FIFO."""
    src = os.path.join(os.environ['MEMTRACE_SOURCE_ROOT'], 'tests', 'groundtruth')
    lib = os.path.join(top, 'lib')
    os.makedirs(lib)
    os.mkfifo(os.path.join(lib, 'libc.so.6'))
    prog = os.path.join(top, 'runpath')
    r = subprocess.run(['cc', '-O1', '-I', src, '-o', prog, os.path.join(src, 'peak.c'),
                        f'-Wl,--enable-new-dtags,-rpath,{lib}'], capture_output=True, text=True)
    if not check(r.returncode == 0, f'cc with a RUNPATH: {r.stderr[-300:]}'):
        return
    p = subprocess.Popen([MEMTRACE, 'record', '--backend=bpf', '-o', os.path.join(top, 'rp.mtrace'),
                          '--', prog], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    started = False
    for _ in range(100):  # until the program runs (it then waits in ld.so)
        time.sleep(0.1)
        started = any(os.path.realpath(f'/proc/{d}/exe') == os.path.realpath(prog)
                      for d in os.listdir('/proc') if d.isdigit() and os.path.exists(f'/proc/{d}/exe'))
        if started:
            break
    check(started, 'record --backend=bpf, a FIFO in RUNPATH: the program is run')
    os.killpg(p.pid, signal.SIGINT)  # a ^C at the terminal
    try:
        _, err = p.communicate(timeout=30)
        check(p.returncode == 130,
              f'record --backend=bpf, a FIFO in RUNPATH: ends on ^C with the program\'s status '
              f'130 (got {p.returncode}): {err.strip()[-200:]}')
    except subprocess.TimeoutExpired:
        check(False, 'record --backend=bpf, a FIFO in RUNPATH: ends on ^C (it hung)')
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()


def main():
    why = bpflib.bpf_unavailable()
    if why:
        print(f'SKIP: {why}')
        return 77
    if not shutil.which('setpriv'):
        print('SKIP: setpriv (util-linux) is needed to run the mapper as nobody')
        return 77
    top = tempfile.mkdtemp(prefix='mt-hostile-')
    mapper = None
    try:
        os.chmod(top, 0o755)
        wrap = wrap_section()
        check(len(wrap) == 56, f'the crafted .eh_frame is 56 bytes ({len(wrap)})')
        files = {'wrap.so': elf(wrap, 1), 'many.so': elf(big_section(100, 4000), 160)}
        paths = []
        for name, img in files.items():
            p = os.path.join(top, name)
            with open(p, 'wb') as f:
                f.write(img)
            os.chmod(p, 0o644)
            paths.append(p)
        mapper = subprocess.Popen(
            ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}', '--clear-groups',
             sys.executable, '-c', MAPPER] + paths,
            stdout=subprocess.PIPE, text=True, cwd=top)
        if not check(mapper.stdout.readline().strip() == 'mapped', 'the mapper maps both files'):
            return 1
        pid = str(mapper.pid)
        rec = os.path.join(top, 'attach.mtrace')
        rc, out, _ = run_root('memtrace -p', ['-p', pid, '--duration', '2', '-o', rec], top)
        if rc == 0:
            r = subprocess.run([MEMTRACE, 'report', '--json', rec], capture_output=True, text=True)
            out = r.stdout
            try:
                rep = json.loads(out)
                allocs = sum(p['totals']['allocations'] for p in rep['processes'])
            except (ValueError, KeyError) as e:
                allocs = 0
                print(f'-p --json: {e}: {out[:300]}')
            check(allocs > 10, f'memtrace -p: the mapper\'s allocations are reported ({allocs})')
        run_root('memtrace top', ['top', '-p', pid, '--interval', '1', '--count', '2'], top)
        run_root('memtrace sweep', ['sweep', '--duration', '2'], top)
        check(mapper.poll() is None, 'the mapper is still running')
        runpath_fifo(top)
    finally:
        if mapper:
            mapper.kill()
            mapper.wait()
        shutil.rmtree(top, ignore_errors=True)
    print(f'{len(failures)} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""test_embed.py - --embed-binaries takes nothing but the files the traced
processes mapped, and writes nothing but the recording it made (issue 33,
points 6 and 7).

In a private temporary directory this test builds a library without a
build-id (libnoid.so) and a program that dlopens it, allocates through it,
says it is ready and waits for a file to appear.  It also makes a root-only
0600 file holding a secret.  Then, for the shim (record), the BPF backend
(record --backend=bpf) and attach -p:

  - the library: while the recording runs, its path is swapped for a
    symbolic link to the secret (as the library's owner could).  memtrace
    took the library back by its path at the end, found no build-id to
    check, and put the secret into root's recording.  Now the library
    embedded is the file the process mapped, and the secret is nowhere in
    the recording.
  - the output: while the recording runs, it is renamed away and a
    symbolic link to another recording (a root-owned file) is put at its
    name (as the owner of the output's folder could).  memtrace opened the
    name again to append the binaries, and appended them to that file.  Now
    the other file is untouched, and the binaries are in the recording made.

The swaps happen at points the test controls: after the program said it is
ready and the recorder has had time to see its library, before the program
is let go (record) or before attach's --duration ends.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import bpflib

MEMTRACE = os.environ['MEMTRACE']
failures = []

LIB_MARKER = b'MT-EMBED-LIBRARY-MARKER-5d1c'
LIB = r'''
#include <stdlib.h>
const char mt_marker[] = "%s";
void *noid_alloc(size_t n) { return malloc(n + (mt_marker[0] == 'M' ? 0 : 1)); }
''' % LIB_MARKER.decode()

PROG = r'''
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
	void *(*noid_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "noid_alloc");
	FILE *f = fopen(argv[2], "w");
	fputs("ready\n", f);
	fclose(f);
	void *kept[64] = { 0 };
	for (int i = 0; access(argv[3], F_OK) != 0 && i < 30000; i++) {
		free(kept[i % 64]);
		kept[i % 64] = noid_alloc(1000 + i % 64);
		usleep(2000);
	}
	return 0;
}
'''


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def build(top):
    """libnoid.so (no build-id) and the program; (lib, prog) or None."""
    for name, text in (('noid.c', LIB), ('prog.c', PROG)):
        with open(os.path.join(top, name), 'w') as f:
            f.write(text)
    lib, prog = os.path.join(top, 'libnoid.so'), os.path.join(top, 'prog')
    for args in (['-shared', '-fPIC', '-Wl,--build-id=none', '-o', lib, 'noid.c'],
                 ['-o', prog, 'prog.c', '-ldl']):
        r = subprocess.run(['cc', '-O1'] + args, cwd=top, capture_output=True, text=True)
        if not check(r.returncode == 0, f'cc {args[-1]}: {r.stderr[-300:]}'):
            return None
    r = subprocess.run(['readelf', '-n', lib], capture_output=True, text=True)
    check('Build ID' not in r.stdout, 'libnoid.so has no build-id')
    return lib, prog


def objects(path):
    """The bytes of the embedded binaries of recording PATH, decompressed
    (their OBJECT records: the files' bytes are in them whole)."""
    data = open(path, 'rb').read()
    frames = b''.join(data[off + 24:off + n] for off, n in chunks(data)
                      if int.from_bytes(data[off + 4:off + 8], 'little') == 0xffffffff)
    if not frames:
        return b''
    r = subprocess.run(['zstd', '-d', '-c'], input=frames, capture_output=True)
    check(r.returncode == 0, f'{path}: the objects\' chunks decompress')
    return r.stdout


def chunks(data):
    """[(offset, total length)] of the chunks of a recording's bytes (gtlib's
    chunks(), on bytes)."""
    off, out = data[10] | data[11] << 8, []
    while off + 24 <= len(data) and data[off:off + 4] == b'MTCK':
        n = 24 + int.from_bytes(data[off + 12:off + 16], 'little')
        out.append((off, n))
        off += n
    return out


def wait_for(path, what, seconds=30):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            check(False, f'{what}: within {seconds} s')
            return False
        time.sleep(0.02)
    return True


def swap_for_link(path, target):
    """PATH replaced, in one rename, by a symbolic link to TARGET."""
    tmp = path + '.link'
    os.symlink(target, tmp)
    os.rename(tmp, path)


def run_case(top, how, what, lib0, prog, secret, victim):
    """One backend HOW ('preload', 'bpf', 'attach'), WHAT ('library',
    'output') swapped for a link while it records."""
    d = os.path.join(top, how + '-' + what)
    how_what = f'{how}, {what} swapped'
    os.makedirs(d)
    lib = os.path.join(d, 'libnoid.so')
    shutil.copy(lib0, lib)
    ready, go = os.path.join(d, 'ready'), os.path.join(d, 'go')
    out, moved = os.path.join(d, 'out.mtrace'), os.path.join(d, 'moved.mtrace')
    victim_copy = os.path.join(d, 'victim.mtrace')
    shutil.copy(victim, victim_copy)
    os.chmod(victim_copy, 0o600)
    before = open(victim_copy, 'rb').read()
    target = None
    if how == 'attach':
        target = subprocess.Popen([prog, lib, ready, go])
        if not wait_for(ready, f'{how}: the program starts'):
            target.kill()
            target.wait()
            return
        cmd = [MEMTRACE, 'attach', '-p', str(target.pid), '--duration', '4', '--interval', '0',
               '--embed-binaries', '-o', out]
    else:
        cmd = [MEMTRACE, 'record', '--backend=' + how, '--embed-binaries', '-o', out, '--',
               prog, lib, ready, go]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if how != 'attach' and not wait_for(ready, f'{how}: the program starts'):
            return
        if not wait_for(out, f'{how}: the recording is created'):
            return
        # the recorder has seen the library by now (the shim's ring is
        # drained every 5 ms; BPF rescans every second)
        time.sleep(2)
        if what == 'library':
            swap_for_link(lib, secret)
        else:
            os.rename(out, moved)
            os.symlink(victim_copy, out)
        if how != 'attach':
            open(go, 'w').close()
        try:
            so, se = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
            check(False, f'{how}: memtrace ends')
    finally:
        open(go, 'w').close()  # (whatever went wrong: nothing is left running)
        if p.poll() is None:
            p.kill()
            p.communicate()
        if target:
            target.wait()
    how = how_what
    check(p.returncode == 0, f'{how}: exit status 0 (got {p.returncode}): {se.strip()[-400:]}')
    check('embedded' in se, f'{how}: says what it embedded: {se.strip()[-300:]}')
    after = open(victim_copy, 'rb').read()
    check(after == before,
          f'{how}: the file a link put at the output\'s name is untouched '
          f'({len(before)} bytes, now {len(after)})')
    if what == 'output':
        check(os.path.islink(out), f'{how}: the link is where it was put')
    else:
        moved = out
    if not check(os.path.isfile(moved), f'{how}: the recording made is there'):
        return
    emb = objects(moved)
    check(len(emb) > 0, f'{how}: the recording made holds the binaries ({len(emb)} bytes)')
    secret_bytes = open(secret, 'rb').read()
    check(secret_bytes not in emb and b'MT-SECRET' not in emb,
          f'{how}: the root-only file the library\'s path was linked to is not embedded')
    check(open(lib0, 'rb').read() in emb,
          f'{how}: the library embedded is the file the process mapped')
    r = subprocess.run([MEMTRACE, 'report', moved], capture_output=True, text=True)
    check(r.returncode == 0, f'{how}: the recording made reads ({r.stderr.strip()[-200:]})')


def main():
    for tool in ('cc', 'zstd', 'readelf'):
        if not shutil.which(tool):
            print(f'SKIP: {tool} is needed')
            return 77
    top = tempfile.mkdtemp(prefix='mt-embed-')
    try:
        built = build(top)
        if not built:
            return 1
        lib, prog = built
        secret = os.path.join(top, 'secret')
        with open(secret, 'wb') as f:
            f.write(b'MT-SECRET-' + os.urandom(16).hex().encode() + b'\n')
        os.chmod(secret, 0o600)
        # a root-owned recording, for the output's link to point to
        victim = os.path.join(top, 'victim.mtrace')
        r = subprocess.run([MEMTRACE, 'record', '-q', '-o', victim, '--', '/bin/true'],
                           capture_output=True, text=True)
        if not check(r.returncode == 0, f'a recording to point a link to: {r.stderr[-300:]}'):
            return 1
        hows = ['preload']
        why = bpflib.bpf_unavailable()
        if why:
            print(f'(the BPF cases cannot run: {why})')
        else:
            hows += ['bpf', 'attach']
        for how in hows:
            for what in ('library', 'output'):
                run_case(top, how, what, lib, prog, secret, victim)
        if why and not failures:
            print('SKIP: the shim case passed; the BPF ones need ' + why)
            return 77
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f'{len(failures)} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())

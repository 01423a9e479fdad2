#!/usr/bin/env python3
"""stored.py - rewrites a recording with every chunk stored uncompressed
(flag 0), so that a fuzzer's mutations reach the record decoder instead of
stopping at zstd or zlib.  The layout is man/memtrace-format.5's: a 16-byte
header, then chunks of a 24-byte header (magic, stream, raw length,
compressed length, CRC-32 of the payload, flags) and the payload.

  stored.py IN OUT
"""
import struct
import subprocess
import sys
import zlib

MAGIC = 0x4b43544d


def main():
    data = open(sys.argv[1], 'rb').read()
    out = bytearray(data[:16])
    off = 16
    while off + 24 <= len(data):
        magic, stream, rawlen, clen, crc, flags = struct.unpack_from('<6I', data, off)
        if magic != MAGIC:
            break
        payload = data[off + 24:off + 24 + clen]
        if flags & 1:
            raw = zlib.decompress(payload)
        elif flags & 2:
            raw = subprocess.run(['zstd', '-d', '-c'], input=payload, capture_output=True,
                                 check=True).stdout
        else:
            raw = payload
        assert len(raw) == rawlen, (len(raw), rawlen)
        out += struct.pack('<6I', MAGIC, stream, rawlen, rawlen, zlib.crc32(raw), 0) + raw
        off += 24 + clen
    open(sys.argv[2], 'wb').write(out)


if __name__ == '__main__':
    main()

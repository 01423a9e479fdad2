/*
 * fixture.h - what the unit tests of the read-time stages share: a small
 * recording whose figures are known by construction, written with the
 * record codec (format/codec.h) in one chunk per part (format/format.h), so
 * that a test can cut it between or inside chunks.
 *
 * The process (pid 100, started at FX_T0, exits 0 at FX_T0 + 100 ms) runs on
 * one thread:
 *   +10 ms  A = malloc(100)     stack 1
 *   +20 ms  B = malloc(5000)    stack 2
 *   +30 ms  free(A)             (not temporary: B came between)
 *   -- chunk 2 --
 *   +40 ms  C = malloc(64)      stack 3
 *   +41 ms  free(C)             temporary (the thread's next event)
 *   +50 ms  D = malloc(200)     stack 1, leaked
 *   -- chunk 3 --
 *   +60 ms  B' = realloc(B, 8000) stack 2: frees B, allocates 8000, leaked
 *   +100 ms exit 0
 * Totals: 5 allocations of 13364 bytes, 3 frees, 1 temporary, 2 leaked
 * blocks of 8200 bytes; peak 8200 bytes in 2 blocks at +60 ms (before it
 * 5200 at most: B and D).  Sites: stack 1 (A, D) 2 allocations, 300 bytes,
 * 1 leaked of 200; stack 2 (B, B') 2, 13000 bytes, 1 leaked of 8000;
 * stack 3 (C) 1 of 64, temporary.  Stacks' addresses lie in no module.
 */
#ifndef MEMTRACE_TEST_FIXTURE_H
#define MEMTRACE_TEST_FIXTURE_H

#include "format/codec.h"
#include "format/format.h"
#include "check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define FX_T0 1000000000ull
#define FX_MS 1000000ull
#define FX_PID 100

/* The stacks' return addresses, leaf first. */
static const uint64_t fx_stack1[] = {0x401010, 0x402020};
static const uint64_t fx_stack2[] = {0x401110, 0x402020};
static const uint64_t fx_stack3[] = {0x401210, 0x402120, 0x403000};

/* The records of part PART (0, 1, 2) of the stream into BUF; E carries the
 * encoder's state from one part to the next. */
__attribute__((unused)) static size_t fx_part(struct mt_enc *e, uint8_t *buf, int part)
{
	uint8_t *p = buf;
	switch (part) {
	case 0:
		p = mt_enc_process(e, p, FX_PID, 1, 1700000000000000000ull, FX_T0, "preload",
				   "/bin/fixture", 12, "fixture\0-x", 10);
		p = mt_enc_stack(p, 1, fx_stack1, 2);
		p = mt_enc_stack(p, 2, fx_stack2, 2);
		p = mt_enc_stack(p, 3, fx_stack3, 3);
		p = mt_enc_thread(e, p, FX_PID);
		p = mt_enc_alloc(e, p, MT_FN_MALLOC, FX_T0 + 10 * FX_MS, 0x10000, 100, 1);
		p = mt_enc_alloc(e, p, MT_FN_MALLOC, FX_T0 + 20 * FX_MS, 0x20000, 5000, 2);
		p = mt_enc_free(e, p, FX_T0 + 30 * FX_MS, 0x10000);
		break;
	case 1:
		p = mt_enc_alloc(e, p, MT_FN_MALLOC, FX_T0 + 40 * FX_MS, 0x30000, 64, 3);
		p = mt_enc_free(e, p, FX_T0 + 41 * FX_MS, 0x30000);
		p = mt_enc_alloc(e, p, MT_FN_CALLOC, FX_T0 + 50 * FX_MS, 0x40000, 200, 1);
		break;
	default:
		p = mt_enc_realloc(e, p, MT_FN_REALLOC, FX_T0 + 60 * FX_MS, 0x20000, 0x50000, 8000, 2);
		p = mt_enc_exit(p, FX_T0 + 100 * FX_MS, 0);
	}
	return (size_t)(p - buf);
}

/* Writes the fixture recording to PATH, one chunk per part; the offsets at
 * which chunks 2 and 3 begin and the file's size go to ENDS[0..2] (may be
 * NULL).  Returns 0, or -1. */
__attribute__((unused)) static int fx_write(const char *path, long ends[3])
{
	static uint8_t buf[4096], scratch[8192];
	struct mt_enc e = {0};
	z_stream zs = {0};
	int fd = mt_file_create(path), rc = 0;
	if (fd < 0 || deflateInit(&zs, 1) != Z_OK)
		return -1;
	for (int part = 0; part < 3; part++) {
		size_t len = fx_part(&e, buf, part);
		if (mt_chunk_write(fd, &zs, 0, buf, len, scratch, sizeof scratch) < 0)
			rc = -1;
		if (ends)
			ends[part] = (long)lseek(fd, 0, SEEK_CUR);
	}
	deflateEnd(&zs);
	close(fd);
	return rc;
}

#endif

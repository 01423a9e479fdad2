/*
 * test_compact.c - unit tests of the compact rewrite (collect/compact.c):
 * allocations and frees come out named by allocation serial, in order, with
 * their times, threads, sizes and stacks; a free of a block allocated before
 * tracing keeps its address; a realloc of a known block takes the next
 * serial, one of an unknown block becomes a free by address and an
 * allocation; other records pass through; the serials go on across feeds.
 * Mapping calls (EXT MMAP) pass through whole, on their own thread, and a
 * block's own mapping (MT_MAP_BLOCK) names its block by serial as ALLOC does,
 * and so do the blocks a leak scan found lost (EXT LEAKS).
 */
#include "collect/compact.h"
#include "format/codec.h"
#include "../check.h"

#include <stdio.h>
#include <string.h>

#define T 1000000000ull
#define K(n) MT_SERIAL_KEY(n)

static uint8_t out[1 << 14];
static size_t outlen;

static void collect(void *ctx, const uint8_t *records, size_t len)
{
	(void)ctx;
	CHECK(outlen + len <= sizeof out);
	if (outlen + len <= sizeof out) {
		memcpy(out + outlen, records, len);
		outlen += len;
	}
}

/* The tag bytes of the compact records, to see that the compact forms were
 * written (the decoder turns them back into ALLOC, FREE and REALLOC). */
static int count_tag(const uint8_t *p, size_t len, int type)
{
	struct mt_dec d = {p, p + len};
	struct mt_event ev;
	int n = 0;
	for (;;) {
		const uint8_t *at = d.p;
		if (mt_dec_next(&d, &ev) <= 0)
			break;
		while (at < d.p && (*at & 15) == MT_REC_THREAD) /* a THREAD record went first */
			at += 2;
		n += (*at & 15) == type;
	}
	return n;
}

static void test_mmap(void)
{
	static uint8_t in[4096];
	static const uint64_t pcs[3] = {0x401000, 0x402000, 0x3000};
	struct mt_enc e = {0};
	uint8_t *p = in;
	struct mt_mapcall block = {.kind = MT_MAP_BLOCK, .by = MT_MAP_BY_ALLOCATOR, .prot = 3,
				   .flags = 0x22, .fd = -1, .addr = 0x5000, .len = 1052672};
	struct mt_mapcall file = {.kind = MT_MAP_MMAP, .prot = 1, .flags = 1, .fd = 3,
				  .addr = 0x7f0000000000, .len = 65536, .old_addr = 0x1000,
				  .offset = 4096};
	struct mt_mapcall fail = {.kind = MT_MAP_MREMAP, .fd = -1, .error = 12, .old_addr = 0x8000,
				  .old_len = 4096, .len = 1ull << 40, .flags = 1};
	p = mt_enc_thread(&e, p, 9);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 1, 0x5000, 1048576, 1);
	p = mt_enc_mmap(p, T + 1, &block, pcs, 2, "", 0);
	p = mt_enc_thread(&e, p, 10);
	p = mt_enc_mmap(p, T + 2, &file, pcs, 3, "/tmp/data", 9);
	p = mt_enc_mmap(p, T + 3, &fail, pcs, 1, "", 0);
	p = mt_enc_thread(&e, p, 9);
	p = mt_enc_free(&e, p, T + 4, 0x5000);

	outlen = 0;
	struct mt_compact *c = mt_compact_new(collect, NULL);
	mt_compact_feed(c, in, (size_t)(p - in));
	mt_compact_free(c);
	struct mt_dec d = {out, out + outlen};
	static struct mt_event ev[8];
	int n = 0;
	while (n < 8 && mt_dec_next(&d, &ev[n]) > 0)
		n++;
	CHECK(d.p == d.end && n == 5);
	if (n != 5)
		return;
	CHECK(ev[0].type == MT_REC_ALLOC && ev[0].ptr == K(1));
	CHECK(ev[1].type == MT_REC_EXT && ev[1].ext == MT_EXT_MMAP && ev[1].tid == 9);
	CHECK(ev[1].map.kind == MT_MAP_BLOCK && ev[1].map.addr == K(1) && ev[1].map.len == 1052672);
	CHECK(ev[1].map.by == MT_MAP_BY_ALLOCATOR && ev[1].nframes == 2 && ev[1].frames[1] == 0x402000);
	CHECK(ev[2].type == MT_REC_EXT && ev[2].tid == 10 && ev[2].ts == T + 2);
	CHECK(!memcmp(&ev[2].map, &file, sizeof file));
	CHECK(ev[2].nframes == 3 && ev[2].frames[2] == 0x3000);
	CHECK(ev[2].path.len == 9 && !memcmp(ev[2].path.s, "/tmp/data", 9));
	CHECK(ev[3].tid == 10 && !memcmp(&ev[3].map, &fail, sizeof fail) && ev[3].path.len == 0);
	CHECK(ev[4].type == MT_REC_FREE && ev[4].ptr == K(1) && ev[4].tid == 9);
}

static void test_leaks(void)
{
	static uint8_t in[1024];
	struct mt_enc e = {0};
	uint8_t *p = in;
	p = mt_enc_thread(&e, p, 9);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 1, 0x5000, 16, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 2, 0x6000, 32, 1);
	/* 0x5000 and 0x6000 are live: named by serial; 0x7000 predates tracing */
	uint64_t keys[3] = {0x6000, 0x7000, 0x5000};
	p = mt_enc_leaks(p, MT_LEAK_DEFINITE, keys, 3);
	outlen = 0;
	struct mt_compact *c = mt_compact_new(collect, NULL);
	mt_compact_feed(c, in, (size_t)(p - in));
	mt_compact_free(c);
	struct mt_dec d = {out, out + outlen};
	static struct mt_event ev;
	int found = 0;
	while (mt_dec_next(&d, &ev) > 0)
		if (ev.type == MT_REC_EXT && ev.ext == MT_EXT_LEAKS) {
			found = 1;
			CHECK(ev.value == MT_LEAK_DEFINITE && ev.nframes == 3);
			CHECK(ev.frames[0] == K(2) && ev.frames[1] == 0x7000 && ev.frames[2] == K(1));
		}
	CHECK(found);
}

int main(void)
{
	test_mmap();
	test_leaks();
	outlen = 0;
	static uint8_t in[2048];
	static const uint64_t pcs[2] = {0x401000, 0x402000};
	struct mt_enc e = {0};
	uint8_t *p = in, *half;
	p = mt_enc_stack(p, 1, pcs, 2);
	p = mt_enc_thread(&e, p, 7);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 1, 0x1000, 10, 1);
	p = mt_enc_alloc(&e, p, MT_FN_CALLOC, T + 2, 0x2000, 20, 1);
	p = mt_enc_free(&e, p, T + 3, 0x1000);
	p = mt_enc_free(&e, p, T + 4, 0x9990); /* allocated before tracing */
	half = p;
	p = mt_enc_thread(&e, p, 8);
	p = mt_enc_realloc(&e, p, MT_FN_REALLOC, T + 5, 0x2000, 0x3000, 30, 2);
	p = mt_enc_realloc(&e, p, MT_FN_REALLOCARRAY, T + 6, 0x7770, 0x4000, 40, 2); /* unknown old */
	p = mt_enc_marker(&e, p, T + 7, 42, "mark", 4);
	p = mt_enc_free(&e, p, T + 8, 0x3000);
	p = mt_enc_free(&e, p, T + 9, 0x4000);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T + 10, 0x1000, 50, 1); /* an address used again */

	struct mt_compact *c = mt_compact_new(collect, NULL);
	mt_compact_feed(c, in, (size_t)(half - in));
	size_t first = outlen;
	CHECK(first > 0); /* what a feed makes is emitted before it returns */
	mt_compact_feed(c, half, (size_t)(p - half));
	mt_compact_free(c);

	struct mt_dec d = {out, out + outlen};
	static struct mt_event ev[16];
	int n = 0;
	while (n < 16 && mt_dec_next(&d, &ev[n]) > 0)
		n++;
	CHECK(d.p == d.end);
	CHECK(n == 12);
	if (n != 12)
		return 1;
	CHECK(ev[0].type == MT_REC_STACK && ev[0].stack == 1 && ev[0].nframes == 2 && ev[0].frames[1] == 0x402000);
	CHECK(ev[1].type == MT_REC_ALLOC && ev[1].ptr == K(1) && ev[1].size == 10 && ev[1].stack == 1);
	CHECK(ev[1].ts == T + 1 && ev[1].tid == 7 && ev[1].fn == MT_FN_MALLOC);
	CHECK(ev[2].type == MT_REC_ALLOC && ev[2].ptr == K(2) && ev[2].size == 20 && ev[2].fn == MT_FN_CALLOC);
	CHECK(ev[3].type == MT_REC_FREE && ev[3].ptr == K(1) && ev[3].ts == T + 3);
	CHECK(ev[4].type == MT_REC_FREE && ev[4].ptr == 0x9990 && ev[4].ts == T + 4);
	CHECK(ev[5].type == MT_REC_REALLOC && ev[5].old_ptr == K(2) && ev[5].ptr == K(3));
	CHECK(ev[5].size == 30 && ev[5].stack == 2 && ev[5].tid == 8 && ev[5].fn == MT_FN_REALLOC);
	/* realloc of a block the stream never saw: its free stays unmatched */
	CHECK(ev[6].type == MT_REC_FREE && ev[6].ptr == 0x7770 && ev[6].ts == T + 6);
	CHECK(ev[7].type == MT_REC_ALLOC && ev[7].ptr == K(4) && ev[7].size == 40 && ev[7].stack == 2);
	CHECK(ev[7].fn == MT_FN_REALLOCARRAY && ev[7].tid == 8);
	CHECK(ev[8].type == MT_REC_MARKER && ev[8].value == 42 && ev[8].ts == T + 7);
	CHECK(ev[8].text.len == 4 && !memcmp(ev[8].text.s, "mark", 4));
	CHECK(ev[9].type == MT_REC_FREE && ev[9].ptr == K(3) && ev[9].ts == T + 8);
	CHECK(ev[10].type == MT_REC_FREE && ev[10].ptr == K(4));
	CHECK(ev[11].type == MT_REC_ALLOC && ev[11].ptr == K(5) && ev[11].size == 50 && ev[11].ts == T + 10);

	CHECK(count_tag(out, outlen, MT_REC_NALLOC) == 4);
	CHECK(count_tag(out, outlen, MT_REC_NFREE) == 3);
	CHECK(count_tag(out, outlen, MT_REC_NREALLOC) == 1);
	CHECK(count_tag(out, outlen, MT_REC_FREE) == 2);
	CHECK(count_tag(out, outlen, MT_REC_ALLOC) == 0);

	if (failures) {
		fprintf(stderr, "compact: %d checks failed\n", failures);
		return 1;
	}
	printf("compact: all checks passed\n");
	return 0;
}

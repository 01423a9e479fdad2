/*
 * hostile_sizes.c - writes two recordings whose figures no real program
 * can have: sizes near 2^64 and 2^63, sums that pass them, exit statuses
 * INT64_MIN and INT64_MAX (the record holds any 64-bit value).  Read by
 * test_hostile_sizes.py, which runs report, tree, export, diff and query on
 * them: memtrace built with UBSan must not find signed overflow anywhere.
 *
 *   hostile-sizes NEW BASE
 *
 * NEW, stream 0: pid 100, one thread, stack 1 and 2
 *   malloc(2^64 - 1), malloc(2^63 - 1) (stack 1, both leaked: the bytes
 *   pass 2^64), malloc(2^63) freed (stack 2, temporary), realloc of the
 *   second to 2^64 - 2; exit status INT64_MIN.
 * NEW, stream 1: pid 101: malloc(2^63 + 5) at a stack of its own, leaked;
 *   exit status INT64_MAX.
 * BASE: pid 100 with malloc(1) at stack 1 and malloc(2^64 - 1) at stack 2,
 *   both leaked, exit status -(2^63 - 1): each site's difference from NEW
 *   is beyond what an int64_t holds, in both directions.
 */
#include "format/codec.h"
#include "format/format.h"

#include <stdio.h>
#include <unistd.h>
#include <zlib.h>

#define T0 1000000000ull
#define MS 1000000ull

static const uint64_t stack1[] = { 0x401010, 0x402020 };
static const uint64_t stack2[] = { 0x401110, 0x402020 };
static const uint64_t stack3[] = { 0x401210, 0x402020 };

static uint8_t *head(struct mt_enc *e, uint8_t *p, uint32_t pid)
{
	p = mt_enc_process(e, p, pid, 1, 1700000000000000000ull, T0, "preload", "/bin/hostile", 12,
			   "hostile", 7);
	p = mt_enc_stack(p, 1, stack1, 2);
	p = mt_enc_stack(p, 2, stack2, 2);
	p = mt_enc_stack(p, 3, stack3, 2);
	return mt_enc_thread(e, p, pid);
}

static int put(int fd, z_stream *zs, uint32_t stream, const uint8_t *buf, const uint8_t *end)
{
	static uint8_t scratch[8192];
	return mt_chunk_write(fd, zs, stream, buf, (size_t)(end - buf), scratch, sizeof scratch);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: hostile-sizes NEW BASE\n");
		return 2;
	}
	static uint8_t buf[4096];
	z_stream zs = { 0 };
	int rc = 0;

	int fd = mt_file_create(argv[1]);
	if (fd < 0 || deflateInit(&zs, 1) != Z_OK)
		return 1;
	struct mt_enc e = { 0 };
	uint8_t *p = head(&e, buf, 100);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T0 + 10 * MS, 0x10000, UINT64_MAX, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T0 + 20 * MS, 0x20000, INT64_MAX, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T0 + 30 * MS, 0x30000, 1ull << 63, 2);
	p = mt_enc_free(&e, p, T0 + 31 * MS, 0x30000);
	p = mt_enc_realloc(&e, p, MT_FN_REALLOC, T0 + 40 * MS, 0x20000, 0x40000, UINT64_MAX - 1, 1);
	p = mt_enc_exit(p, T0 + 100 * MS, INT64_MIN);
	rc |= put(fd, &zs, 0, buf, p);
	e = (struct mt_enc){ 0 };
	p = head(&e, buf, 101);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T0 + 10 * MS, 0x10000, (1ull << 63) + 5, 3);
	p = mt_enc_exit(p, T0 + 100 * MS, INT64_MAX);
	rc |= put(fd, &zs, 1, buf, p);
	close(fd);

	fd = mt_file_create(argv[2]);
	if (fd < 0 || deflateReset(&zs) != Z_OK)
		return 1;
	e = (struct mt_enc){ 0 };
	p = head(&e, buf, 100);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T0 + 10 * MS, 0x10000, 1, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, T0 + 20 * MS, 0x20000, UINT64_MAX, 2);
	p = mt_enc_exit(p, T0 + 100 * MS, -INT64_MAX);
	rc |= put(fd, &zs, 0, buf, p);
	close(fd);
	deflateEnd(&zs);
	return rc ? 1 : 0;
}

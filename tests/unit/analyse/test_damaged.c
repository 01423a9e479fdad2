/*
 * test_damaged.c - the recording reader (analyse/recording.c, format/
 * reader.c) on damaged and crafted files: each gives figures or a one-line
 * error that names the file (and, for damage, the offset), never a crash,
 * memory in proportion to what the file holds, and no time quadratic in it.  Recordings are written
 * here record by record with the codec's encoders; the inputs the fuzzer
 * once broke the reader with (tests/fuzz/corpus/regress-*) are loaded too.
 *
 *   test-damaged TMPDIR CORPUS
 */
#include "analyse/recording.h"
#include "format/format.h"
#include "../check.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

static char path[4096];

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Appends a chunk of STREAM holding DATA[0..LEN) (stored, or COMP[0..CLEN)
 * with FLAGS) to BUF at *N. */
static void chunk(uint8_t *buf, size_t *n, uint32_t stream, const void *data, size_t len,
		  const void *comp, size_t clen, uint32_t flags)
{
	if (!comp) {
		comp = data;
		clen = len;
	}
	uint8_t *h = buf + *n;
	put32(h, MT_CHUNK_MAGIC);
	put32(h + 4, stream);
	put32(h + 8, (uint32_t)len);
	put32(h + 12, (uint32_t)clen);
	put32(h + 16, (uint32_t)crc32(0, comp, (uInt)clen));
	put32(h + 20, flags);
	memcpy(h + MT_CHUNK_HEADER_SIZE, comp, clen);
	*n += MT_CHUNK_HEADER_SIZE + clen;
}

static size_t header(uint8_t *buf)
{
	memset(buf, 0, MT_FILE_HEADER_SIZE);
	memcpy(buf, MT_FILE_MAGIC, 8);
	buf[8] = MT_FILE_VERSION;
	buf[10] = MT_FILE_HEADER_SIZE;
	return MT_FILE_HEADER_SIZE;
}

static void save(const uint8_t *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, buf, n) == (ssize_t)n);
	close(fd);
}

/* Loads PATH expecting an error: one line, naming the file and containing
 * MENTION. */
static void check_error(const char *what, const char *mention)
{
	struct mt_recording r = { 0 };
	char err[512] = "";
	int rc = mt_recording_load(&r, path, err, sizeof err);
	printf("%s: %s\n", what, rc ? err : "(loaded)");
	CHECK(rc == -1);
	CHECK(strchr(err, '\n') == NULL && strstr(err, path) != NULL);
	CHECK(strstr(err, mention) != NULL);
	if (!rc)
		mt_recording_free(&r);
}

/* A free of address 0 (free(NULL)) is no event of any block; an allocation
 * at 0 only a damaged file holds is left out; realloc from 0 is malloc and
 * realloc to 0 a free.  The first of these crashed `report` (rc 139). */
static void test_address_zero(void)
{
	static uint8_t buf[4096], rec[256];
	struct mt_enc e = { 0 };
	uint8_t *p = rec;
	uint64_t frames[1] = { 0x401000 };
	p = mt_enc_free(&e, p, 1, 0); /* before any block or site */
	p = mt_enc_stack(p, 1, frames, 1);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, 2, 0x1000, 10, 1);
	p = mt_enc_free(&e, p, 3, 0);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOC, 4, 0, 5, 1);
	p = mt_enc_free(&e, p, 5, 0);
	p = mt_enc_realloc(&e, p, MT_FN_REALLOC, 6, 0, 0x2000, 7, 1);
	p = mt_enc_realloc(&e, p, MT_FN_REALLOC, 7, 0x2000, 0, 0, 1);
	p = mt_enc_free(&e, p, 8, 0);
	size_t n = header(buf);
	chunk(buf, &n, 0, rec, (size_t)(p - rec), NULL, 0, 0);
	save(buf, n);

	struct mt_recording r = { 0 };
	char err[512] = "";
	int rc = mt_recording_load(&r, path, err, sizeof err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "address 0: %s\n", err);
		return;
	}
	CHECK(r.nprocs == 1 && !r.truncated);
	const struct mt_totals *t = &r.procs[0]->figures.t;
	CHECK_EQ(t->allocations, 2); /* 0x1000, and 0x2000 through realloc(NULL) */
	CHECK_EQ(t->allocated_bytes, 17);
	CHECK_EQ(t->frees, 1); /* 0x2000, by realloc to 0 */
	CHECK_EQ(t->unmatched_frees, 0);
	CHECK_EQ(t->live_count, 1);
	CHECK_EQ(t->live_bytes, 10);
	CHECK_EQ(t->peak_bytes, 17);
	mt_recording_free(&r);
}

static long maxrss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A 1 MB file of 41,942 one-record streams: each stream was a process with
 * 40 KB of tables (1.4 GB, and 10 s in `report`); now it costs its struct. */
static void test_many_streams(void)
{
	size_t size = 1 << 20, streams = 0;
	uint8_t *buf = malloc(size), rec = MT_REC_MODULES_RESET;
	size_t n = header(buf);
	while (n + MT_CHUNK_HEADER_SIZE + 1 <= size)
		chunk(buf, &n, (uint32_t)streams++ * 7919, &rec, 1, NULL, 0, 0);
	save(buf, n);
	free(buf);

	long before = maxrss_kb();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct mt_recording r = { 0 };
	char err[512] = "";
	CHECK(mt_recording_load(&r, path, err, sizeof err) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long grew = maxrss_kb() - before;
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%zu streams in a %zu-byte file: %ld KB more, %.2f s\n", streams, n, grew, secs);
	CHECK_EQ(r.nprocs, streams);
	/* about 0.6 KB a stream: 24 MB (15 MB as AddressSanitizer counts) */
	CHECK(grew < 128 * 1024);
	CHECK(secs < 10);
	mt_recording_free(&r);
}

/* The inverse of mt_hash64: the address whose hash is H. */
static uint64_t unhash(uint64_t h)
{
	uint64_t c = 0xff51afd7ed558ccdull, inv = c;
	for (int i = 0; i < 6; i++) /* Newton: inverse of c modulo 2^64 */
		inv *= 2 - c * inv;
	h ^= h >> 33;
	h *= inv;
	return h ^ (h >> 33);
}

/* 70,000 blocks whose addresses all hash to slot 0 of any table of up to
 * 2^32 slots, half of them freed (1.4 MB): with an unkeyed hash every lookup
 * scanned them all (8 s); keyed, the load takes milliseconds. */
static void test_flood(void)
{
	size_t cap = 2u << 20, nblocks = 70000;
	uint8_t *rec = malloc(cap), *buf = malloc(cap + 256), *p = rec;
	struct mt_enc e = { 0 };
	uint64_t frames[1] = { 0x401000 };
	p = mt_enc_stack(p, 1, frames, 1);
	for (size_t i = 1; i <= nblocks; i++)
		p = mt_enc_alloc(&e, p, MT_FN_MALLOC, i, unhash((uint64_t)i << 32), 16, 1);
	for (size_t i = 1; i <= nblocks; i += 2)
		p = mt_enc_free(&e, p, nblocks + i, unhash((uint64_t)i << 32));
	size_t n = header(buf);
	chunk(buf, &n, 0, rec, (size_t)(p - rec), NULL, 0, 0);
	save(buf, n);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct mt_recording r = { 0 };
	char err[512] = "";
	int rc = mt_recording_load(&r, path, err, sizeof err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%zu colliding blocks in a %zu-byte file: %.2f s\n", nblocks, n, secs);
	CHECK(rc == 0);
	CHECK(secs < 2);
	if (!rc) {
		CHECK_EQ(r.procs[0]->figures.t.allocations, nblocks);
		CHECK_EQ(r.procs[0]->figures.t.frees, nblocks / 2);
		CHECK_EQ(r.procs[0]->figures.t.unmatched_frees, 0);
		CHECK_EQ(r.procs[0]->figures.t.live_count, nblocks / 2);
		mt_recording_free(&r);
	}
	free(rec);
	free(buf);
}

/* Damage gives an error that says where: a malformed record in a chunk
 * whose CRC is right, named by the chunk's offset and the record's byte. */
static void test_malformed_record(void)
{
	static uint8_t buf[4096];
	uint8_t rec[] = { MT_REC_MODULES_RESET, MT_REC_MODULES_RESET, 0x0f /* NREALLOC */, 1 };
	size_t n = header(buf);
	chunk(buf, &n, 0, rec, 1, NULL, 0, 0);
	chunk(buf, &n, 0, rec, sizeof rec, NULL, 0, 0);
	save(buf, n);
	check_error("malformed record", "a malformed record at byte 2 of the chunk at offset 41");
	/* the same in the binaries' stream, whose chunks the reader decodes
	 * whole itself: checked all the same */
	n = header(buf);
	chunk(buf, &n, MT_STREAM_OBJECTS, rec, 1, NULL, 0, 0);
	chunk(buf, &n, MT_STREAM_OBJECTS, rec, sizeof rec, NULL, 0, 0);
	save(buf, n);
	check_error("malformed record in the binaries",
		    "a malformed record at byte 2 of the chunk at offset 41");
}

/* Compression is no sign of damage: a loop of malloc/free in the compact
 * form compresses far beyond zlib's 1032:1 (4 million pairs recorded by
 * `memtrace record` took 4 KB), so a reader must not refuse a chunk for it. */
static void test_expansion(void)
{
	size_t raw = 8u << 20, cap = ZSTD_compressBound(raw), pairs = 0;
	uint8_t *rec = malloc(raw), *comp = malloc(cap), *buf = malloc(cap + 256), *p = rec;
	struct mt_enc e = { 0 };
	while (p + 2 * MT_REC_MAX_SMALL <= rec + raw) {
		p = mt_enc_nalloc(&e, p, MT_FN_MALLOC, 1000 + 2 * pairs, 16, 0);
		p = mt_enc_nfree(&e, p, 1001 + 2 * pairs, e.serial);
		pairs++;
	}
	size_t len = (size_t)(p - rec), clen = ZSTD_compress(comp, cap, rec, len, 3);
	CHECK(!ZSTD_isError(clen) && clen * 1032 < len);
	size_t n = header(buf);
	chunk(buf, &n, 0, rec, len, comp, clen, MT_CHUNK_FLAG_ZSTD);
	save(buf, n);
	struct mt_recording r = { 0 };
	char err[512] = "";
	int rc = mt_recording_load(&r, path, err, sizeof err);
	printf("%zu raw bytes in a %zu-byte chunk: %s\n", len, clen, rc ? err : "loaded");
	CHECK(rc == 0);
	if (!rc) {
		CHECK_EQ(r.procs[0]->figures.t.allocations, pairs);
		CHECK_EQ(r.procs[0]->figures.t.frees, pairs);
		CHECK_EQ(r.procs[0]->figures.t.temporary, pairs);
		CHECK_EQ(r.procs[0]->figures.t.peak_bytes, 16);
		mt_recording_free(&r);
	}
	free(rec);
	free(comp);
	free(buf);
}

/* Every input that once broke the reader: figures, or a one-line error
 * naming the file. */
static void test_regressions(const char *corpus)
{
	DIR *d = opendir(corpus);
	CHECK(d != NULL);
	int seen = 0;
	for (struct dirent *de; d && (de = readdir(d));) {
		if (strncmp(de->d_name, "regress-", 8))
			continue;
		char file[8192], err[512] = "";
		snprintf(file, sizeof file, "%s/%s", corpus, de->d_name);
		struct mt_recording r = { 0 };
		int rc = mt_recording_load(&r, file, err, sizeof err);
		printf("%s: %s\n", de->d_name,
		       rc	   ? err :
		       r.truncated ? "figures (truncated)" :
				     "figures");
		if (rc)
			CHECK(err[0] && !strchr(err, '\n') && strstr(err, file));
		else
			mt_recording_free(&r);
		seen++;
	}
	if (d)
		closedir(d);
	CHECK(seen > 0);
}

int main(int argc, char **argv)
{
	snprintf(path, sizeof path, "%s/damaged.mtrace", argc > 1 ? argv[1] : ".");
	test_many_streams(); /* first: it measures the peak of memory use */
	test_address_zero();
	test_malformed_record();
	test_expansion();
	test_flood();
	test_regressions(argc > 2 ? argv[2] : "corpus");
	unlink(path);
	if (failures) {
		fprintf(stderr, "damaged: %d checks failed\n", failures);
		return 1;
	}
	printf("damaged: all checks passed\n");
	return 0;
}

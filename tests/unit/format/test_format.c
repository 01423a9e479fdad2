/*
 * test_format.c - unit tests of the record codec (codec.h) and the chunked
 * file (format.c): every record type survives a round trip with its exact
 * fields and stream state; a file cut anywhere in its last chunk reads back
 * every earlier chunk and reports the truncation; damaged and foreign files
 * are refused with a reason; a chunk cut short is taken back, and what a
 * chunk that could not be written held is counted and carried in a loss
 * chunk of a fixed size; made-up names never take what exists.
 */
#include "format/codec.h"
#include "format/format.h"
#include "../check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static uint8_t buf[1 << 20];

static size_t encode_all(void)
{
	struct mt_enc e = {0};
	uint8_t *p = buf;
	uint64_t pcs[3] = {0x401136, 0x7f0000001000, 0x401000};
	static const uint8_t id[4] = {0xde, 0xad, 0xbe, 0xef};
	p = mt_enc_process(&e, p, 1234, 1, 1700000000000000000ull, 5000000000ull, "preload", "/bin/app", 8,
			   "app\0-x", 6);
	p = mt_enc_module(p, 0x555500000000, 0x555500001000, 0x555500009000, "/bin/app", 8, id, 4);
	p = mt_enc_stack(p, 7, pcs, 3);
	p = mt_enc_thread(&e, p, 42);
	p = mt_enc_alloc(&e, p, MT_FN_CALLOC, 5000000100ull, 0x5555aaaa0010, 300, 7);
	p = mt_enc_realloc(&e, p, MT_FN_REALLOC, 5000000200ull, 0x5555aaaa0010, 0x5555aaab0000, 4000, 7);
	p = mt_enc_thread(&e, p, 43);
	p = mt_enc_free(&e, p, 5000000150ull /* earlier: clamped */, 0x5555aaab0000);
	p = mt_enc_nalloc(&e, p, MT_FN_MALLOC, 5000000300ull, 16, 7);
	p = mt_enc_nalloc(&e, p, MT_FN_MALLOC, 5000000300ull, 32, 7);
	p = mt_enc_nfree(&e, p, 5000000400ull, 1);
	p = mt_enc_nrealloc(&e, p, MT_FN_REALLOCARRAY, 5000000500ull, 2, 64, 7);
	p = mt_enc_marker(&e, p, 5000000600ull, 9, "phase 2", 7);
	p = mt_enc_lost(p, MT_LOST_STACK, 3);
	p = mt_enc_culled(p, 7, 100, 6400, 40);
	p = mt_enc_peak(p, 5000000700ull, 123456, 78);
	p = mt_enc_heap(p, "jemalloc", 8, "/usr/lib/libjemalloc.so.2", 25);
	p = mt_enc_alloc(&e, p, MT_FN_MALLOCX, 5000000800ull, 0x6000, 77, 7);
	p = mt_enc_realloc(&e, p, MT_FN_XALLOCX, 5000000900ull, 0x6000, 0x6000, 33, 7);
	struct mt_mallopt mo = {.tid = 44, .call = MT_TUNE_MALLOPT, .param = -3, .value = 1 << 20, .result = 1};
	p = mt_enc_mallopt(p, 5000001000ull, &mo, pcs, 3);
	mo = (struct mt_mallopt){.tid = 42, .call = MT_TUNE_MALLOC_TRIM, .param = 0, .value = 4096, .result = 0};
	p = mt_enc_mallopt(p, 5000001100ull, &mo, pcs, 0);
	struct mt_scan_summary sc = {.ns = 1500000, .scanned = 1 << 20, .roots = 4096, .complete = 1};
	p = mt_enc_scan(p, 5999000000ull, &sc, "", 0);
	uint64_t keys[3] = {0x5555aaaa0010, MT_SERIAL_KEY(2), 0x5555aaaa0000};
	p = mt_enc_leaks(p, MT_LEAK_INDIRECT, keys, 3);
	p = mt_enc_exit(p, 6000000000ull, -9);
	return (size_t)(p - buf);
}

static void test_codec(void)
{
	size_t len = encode_all();
	struct mt_dec d = {buf, buf + len};
	static struct mt_event ev;
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_PROCESS && ev.pid == 1234 && ev.ppid == 1);
	CHECK(ev.ts == 5000000000ull && ev.unix_ns == 1700000000000000000ull);
	CHECK(ev.exe.len == 8 && !memcmp(ev.exe.s, "/bin/app", 8) && ev.argv.len == 6);
	CHECK(ev.backend.len == 7 && !memcmp(ev.backend.s, "preload", 7));
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_MODULE && ev.bias == 0x555500000000);
	CHECK(ev.start == 0x555500001000 && ev.end == 0x555500009000 && ev.build_id.len == 4);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_STACK && ev.stack == 7 && ev.nframes == 3);
	CHECK(ev.frames[0] == 0x401136 && ev.frames[1] == 0x7f0000001000 && ev.frames[2] == 0x401000);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_ALLOC && ev.fn == MT_FN_CALLOC);
	CHECK(ev.tid == 42 && ev.ts == 5000000100ull && ev.ptr == 0x5555aaaa0010 && ev.size == 300 && ev.stack == 7);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_REALLOC && ev.old_ptr == 0x5555aaaa0010);
	CHECK(ev.ptr == 0x5555aaab0000 && ev.size == 4000 && ev.ts == 5000000200ull);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_FREE && ev.tid == 43);
	CHECK(ev.ptr == 0x5555aaab0000 && ev.ts == 5000000200ull);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_ALLOC && ev.ptr == MT_SERIAL_KEY(1) && ev.size == 16);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_ALLOC && ev.ptr == MT_SERIAL_KEY(2));
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_FREE && ev.ptr == MT_SERIAL_KEY(1));
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_REALLOC && ev.fn == MT_FN_REALLOCARRAY);
	CHECK(ev.old_ptr == MT_SERIAL_KEY(2) && ev.ptr == MT_SERIAL_KEY(3) && ev.size == 64);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_MARKER && ev.value == 9 && ev.text.len == 7);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_LOST && ev.value == MT_LOST_STACK && ev.count == 3);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_CULLED && ev.count == 100 && ev.bytes == 6400 &&
	      ev.temporary == 40);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_EXT && ev.ext == MT_EXT_PEAK);
	CHECK(ev.ts == 5000000700ull && ev.bytes == 123456 && ev.count == 78);
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_EXT && ev.ext == MT_EXT_HEAP);
	CHECK(ev.text.len == 8 && !memcmp(ev.text.s, "jemalloc", 8) && ev.path.len == 25 &&
	      !memcmp(ev.path.s, "/usr/lib/libjemalloc.so.2", 25));
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_ALLOC && ev.fn == MT_FN_MALLOCX && ev.size == 77);
	CHECK(!strcmp(mt_fn_names[ev.fn], "mallocx"));
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_REALLOC && ev.fn == MT_FN_XALLOCX &&
	      ev.old_ptr == 0x6000 && ev.ptr == 0x6000 && ev.size == 33);
	CHECK(!strcmp(mt_fn_names[ev.fn], "xallocx") && MT_FN_COUNT <= 16);
	/* a mallopt call carries its thread and stack itself, and the thread
	 * state of the records around it stays */
	const uint8_t *at = d.p;
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_EXT && ev.ext == MT_EXT_MALLOPT);
	CHECK(ev.ts == 5000001000ull && ev.tid == 44 && ev.tune.tid == 44 && ev.tune.call == MT_TUNE_MALLOPT);
	CHECK(ev.tune.param == -3 && ev.tune.value == 1 << 20 && ev.tune.result == 1 && ev.nframes == 3);
	CHECK(ev.frames[0] == 0x401136 && ev.frames[1] == 0x7f0000001000 && ev.frames[2] == 0x401000);
	/* re-encoded as it was (the recorder's compaction passes it through) */
	static uint8_t again[MT_REC_MAX_MALLOPT];
	struct mt_enc e2 = {0};
	size_t n1 = (size_t)(d.p - at), n2 = (size_t)(mt_enc_passthrough(&e2, again, &ev) - again);
	CHECK(n1 == n2 && !memcmp(at, again, n1));
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_EXT && ev.ext == MT_EXT_MALLOPT);
	CHECK(ev.tune.call == MT_TUNE_MALLOC_TRIM && ev.tune.value == 4096 && ev.tune.result == 0 &&
	      ev.nframes == 0 && ev.tid == 42);
	/* a leak scan's summary and the blocks it found lost, passed through alike */
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_EXT && ev.ext == MT_EXT_SCAN);
	CHECK(ev.ts == 5999000000ull && ev.scan.complete == 1 && ev.scan.ns == 1500000 &&
	      ev.scan.scanned == 1 << 20 && ev.scan.roots == 4096 && ev.text.len == 0);
	at = d.p;
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_EXT && ev.ext == MT_EXT_LEAKS);
	CHECK(ev.value == MT_LEAK_INDIRECT && ev.nframes == 3 && ev.frames[0] == 0x5555aaaa0010 &&
	      ev.frames[1] == MT_SERIAL_KEY(2) && ev.frames[2] == 0x5555aaaa0000);
	n1 = (size_t)(d.p - at);
	n2 = (size_t)(mt_enc_passthrough(&e2, again, &ev) - again);
	CHECK(n1 == n2 && !memcmp(at, again, n1));
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_EXIT && ev.status == -9 && ev.ts == 6000000000ull);
	CHECK(mt_dec_next(&d, &ev) == 0);

	/* every strict prefix that cuts a record is malformed, never misread */
	int bad = 0;
	for (size_t cut = 1; cut < len; cut++) {
		struct mt_dec t = {buf, buf + cut};
		int r;
		while ((r = mt_dec_next(&t, &ev)) > 0)
			;
		if (r < 0)
			bad++;
	}
	CHECK(bad > 0);
	/* an extended record of a later version is stepped over; a cut one is refused */
	uint8_t later[] = {MT_REC_EXT, 0x7f, 3, 1, 2, 3, MT_REC_LOST, 1, 5};
	struct mt_dec l = {later, later + sizeof later};
	CHECK(mt_dec_next(&l, &ev) == 1 && ev.type == MT_REC_LOST && ev.count == 5);
	struct mt_dec j = {later, later + 4};
	CHECK(mt_dec_next(&j, &ev) == -1 && j.p == later);
	/* a LEAKS record of a kind there is not is malformed */
	uint8_t lk[] = {MT_REC_EXT, MT_EXT_LEAKS, 3, MT_LEAK_KINDS, 1, 2};
	struct mt_dec k = {lk, lk + sizeof lk};
	CHECK(mt_dec_next(&k, &ev) == -1);
	/* an unknown tag... there is none left: every 4-bit tag is defined */
	/* a free referring to a serial before the first allocation is refused */
	uint8_t nf[3] = {MT_REC_NFREE, 0, 5};
	struct mt_dec n = {nf, nf + 3};
	CHECK(mt_dec_next(&n, &ev) == -1);
}

static void write_file(const char *path, int chunks, size_t *sizes)
{
	int fd = mt_file_create(path);
	CHECK(fd >= 0);
	z_stream zs = {0};
	CHECK(deflateInit(&zs, 1) == Z_OK);
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	static uint8_t scratch[1 << 21];
	for (int c = 0; c < chunks; c++) {
		size_t len = encode_all();
		/* chunks alternate: zlib (the shim's), zstd (the recorder's) */
		if (c % 2 == 0)
			CHECK(mt_chunk_write(fd, &zs, (uint32_t)c % 2, buf, len, scratch, sizeof scratch) == 0);
		else
			CHECK(mt_chunk_write_zstd(fd, zc, (uint32_t)c % 2, buf, len, scratch, sizeof scratch) == 0);
		sizes[c] = (size_t)lseek(fd, 0, SEEK_CUR);
	}
	ZSTD_freeCCtx(zc);
	deflateEnd(&zs);
	close(fd);
}

static int count_chunks(const char *path, int *truncated, char *err)
{
	struct mt_file_reader r;
	if (mt_file_open(&r, path, err, 256) < 0)
		return -1;
	uint32_t stream;
	const uint8_t *data;
	size_t len;
	int n = 0;
	while (mt_file_next(&r, &stream, &data, &len) > 0) {
		CHECK(stream == (uint32_t)n % 2);
		CHECK(len == encode_all() && memcmp(data, buf, len) == 0);
		n++;
	}
	*truncated = r.truncated;
	mt_file_close(&r);
	return n;
}

static void test_file(const char *dir)
{
	char path[512], err[256];
	size_t ends[3];
	int truncated;
	snprintf(path, sizeof path, "%s/format-test.mtrace", dir);
	write_file(path, 3, ends);
	CHECK(count_chunks(path, &truncated, err) == 3 && !truncated);

	/* cut inside the last chunk, at every offset: two chunks and "truncated" */
	for (size_t cut = ends[1] + 1; cut < ends[2]; cut += 7) {
		CHECK(truncate(path, (off_t)cut) == 0);
		int n = count_chunks(path, &truncated, err);
		CHECK(n == 2 && truncated);
		if (n != 2 || !truncated) {
			fprintf(stderr, "  cut at %zu of %zu\n", cut, ends[2]);
			break;
		}
	}
	/* a flipped byte in the middle chunk: the first chunk survives */
	write_file(path, 3, ends);
	int fd = open(path, O_RDWR);
	uint8_t b;
	CHECK(pread(fd, &b, 1, (off_t)(ends[0] + 40)) == 1);
	b ^= 0x40;
	CHECK(pwrite(fd, &b, 1, (off_t)(ends[0] + 40)) == 1);
	close(fd);
	CHECK(count_chunks(path, &truncated, err) == 1 && truncated);

	/* refused outright: missing, empty, foreign, future version */
	snprintf(path, sizeof path, "%s/format-missing.mtrace", dir);
	CHECK(count_chunks(path, &truncated, err) == -1 && strstr(err, "cannot open"));
	snprintf(path, sizeof path, "%s/format-empty.mtrace", dir);
	close(open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600));
	CHECK(count_chunks(path, &truncated, err) == -1 && strstr(err, "empty"));
	CHECK(count_chunks("/proc/self/exe", &truncated, err) == -1 && strstr(err, "not a memtrace recording"));
	snprintf(path, sizeof path, "%s/format-future.mtrace", dir);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	CHECK(write(fd, "MEMTRACE\x09\0\x10\0\0\0\0\0", 16) == 16);
	close(fd);
	CHECK(count_chunks(path, &truncated, err) == -1 && strstr(err, "version"));

	/* files are private */
	snprintf(path, sizeof path, "%s/format-mode.mtrace", dir);
	fd = mt_file_create(path);
	struct stat st;
	CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
	close(fd);
}

/* What a chunk that could not be written held, and the fixed-size chunk
 * that carries it instead. */
static void test_loss(void)
{
	size_t len = encode_all();
	struct mt_salvage sv = {0};
	static struct mt_event ev;
	mt_chunk_salvage(buf, len, &sv);
	/* alloc, realloc, free, 2 nalloc, nfree, nrealloc, marker, mallocx,
	 * xallocx; CULLED 100 */
	CHECK(sv.events == 110 && sv.lost[MT_LOST_STACK] == 3 && sv.lost[MT_LOST_BUFFER_FULL] == 0);
	CHECK(sv.have_exit && sv.exit_status == -9 && sv.exit_ts == 6000000000ull);
	CHECK(sv.process == buf && sv.process_len > 0);

	static uint8_t out[4096], out2[4096];
	size_t n = mt_loss_records(&sv, sv.process, sv.process_len, out);
	CHECK(n == MT_LOSS_SIZE(sv.process_len));
	struct mt_dec d = {out, out + n};
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_PROCESS && ev.pid == 1234);
	uint64_t lost[MT_LOST_KIND_COUNT] = {0};
	int r;
	while ((r = mt_dec_next(&d, &ev)) == 1 && ev.type == MT_REC_LOST)
		lost[ev.value] += ev.count;
	CHECK(lost[MT_LOST_WRITE_FAILED] == 110 && lost[MT_LOST_STACK] == 3 && lost[MT_LOST_MAP_FULL] == 0);
	CHECK(r == 1 && ev.type == MT_REC_EXIT && ev.status == -9 && ev.ts == 6000000000ull);
	CHECK(mt_dec_next(&d, &ev) == 0);

	/* before the exit is known: padding of its size, which readers skip */
	struct mt_salvage early = {.events = 1u << 30};
	size_t n2 = mt_loss_records(&early, NULL, 0, out2);
	CHECK(n2 == MT_LOSS_SIZE(0) && n2 + sv.process_len == n);
	struct mt_dec e = {out2, out2 + n2};
	int losts = 0;
	while ((r = mt_dec_next(&e, &ev)) == 1) {
		CHECK(ev.type == MT_REC_LOST);
		losts++;
		if (ev.value == MT_LOST_WRITE_FAILED)
			CHECK(ev.count == 1u << 30);
	}
	CHECK(r == 0 && losts == MT_LOST_KIND_COUNT);
}

/* Made-up names never take what is there; a chunk cut short is taken back. */
static void test_create(const char *dir)
{
	char path[512], link[512];
	snprintf(path, sizeof path, "%s/format-new.mtrace", dir);
	snprintf(link, sizeof link, "%s/format-link.mtrace", dir);
	unlink(path);
	unlink(link);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "theirs", 6) == 6);
	close(fd);
	CHECK(symlink(path, link) == 0);
	errno = 0;
	CHECK(mt_file_create_new(path) < 0 && errno == EEXIST);
	CHECK(mt_file_create_new(link) < 0 && errno == EEXIST);
	struct stat st;
	CHECK(stat(path, &st) == 0 && st.st_size == 6);
	const char *why = mt_file_refused(link, ELOOP);
	CHECK(why && !strcmp(why, "is a symbolic link: not followed"));
	CHECK(mt_file_refused(path, ENOSPC) == NULL);

	/* a file size limit cuts the second chunk short: it is taken back */
	unlink(path);
	fd = mt_file_create_new(path);
	CHECK(fd >= 0);
	size_t len = encode_all();
	static uint8_t out[1 << 16];
	memcpy(out + MT_CHUNK_HEADER_SIZE, buf, len);
	CHECK(mt_chunk_put(fd, out, 0, len, (uint32_t)len, 0) == 0);
	off_t whole = lseek(fd, 0, SEEK_CUR);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = (rlim_t)whole + len / 2;
	signal(SIGXFSZ, SIG_IGN);
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
	CHECK(mt_chunk_put(fd, out, 0, len, (uint32_t)len, 0) < 0 && errno == EFBIG);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(fstat(fd, &st) == 0 && st.st_size == whole && lseek(fd, 0, SEEK_CUR) == whole);
	CHECK(mt_chunk_put(fd, out, 1, len, (uint32_t)len, 0) == 0);
	close(fd);
	int truncated;
	char err[256];
	CHECK(count_chunks(path, &truncated, err) == 2 && !truncated);
	unlink(path);
	unlink(link);
}

int main(int argc, char **argv)
{
	test_codec();
	test_loss();
	test_create(argc > 1 ? argv[1] : "/tmp");
	test_file(argc > 1 ? argv[1] : "/tmp");
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("format: all checks passed\n");
	return failures ? 1 : 0;
}

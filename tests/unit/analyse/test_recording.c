/*
 * test_recording.c - unit tests of the recording reader (analyse/recording.c)
 * on the fixture recording (../fixture.h): read whole, it gives the figures
 * the fixture derives; cut inside a chunk, it gives those of the chunks
 * before the cut with `truncated` set; cut at any byte it never crashes and
 * never counts more than the whole; an empty, foreign or headless file, or
 * one whose first chunk is cut, is an error with a reason (the header alone
 * is a recording of no process).  A file of big chunks holding few events
 * (more than the reading thread may hold at once, chunks.h) gives the
 * figures of every chunk, its blocks named by serial across chunks.
 */
#include "analyse/chunks.h"
#include "analyse/recording.h"
#include "../fixture.h"

#include <fcntl.h>
#include <stdlib.h>

static char path[4096], cut[4096];

/* Writes the first N bytes of the fixture to CUT. */
static void write_cut(const char *data, long n)
{
	int fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, data, (size_t)n) == n);
	close(fd);
}

static const struct mt_totals *totals(const struct mt_recording *r)
{
	return r->nprocs == 1 ? &r->procs[0]->figures.t : NULL;
}

static void test_whole(void)
{
	struct mt_recording r = { 0 };
	char err[256] = "";
	CHECK(mt_recording_load(&r, path, err, sizeof err) == 0);
	CHECK(!r.truncated && r.nprocs == 1);
	const struct mt_totals *t = totals(&r);
	if (t) {
		const struct mt_process *p = r.procs[0];
		CHECK_EQ(p->pid, FX_PID);
		CHECK_EQ(p->ppid, 1);
		CHECK(!strcmp(p->exe, "/bin/fixture") && !strcmp(p->backend, "preload"));
		CHECK(p->argc == 2 && !strcmp(p->argv[0], "fixture") && !strcmp(p->argv[1], "-x"));
		CHECK(p->exited && p->exit_status == 0);
		CHECK_EQ(p->start_ts, FX_T0);
		CHECK_EQ(p->end_ts, FX_T0 + 100 * FX_MS);
		CHECK_EQ(p->figures.nsites, 3);
		CHECK_EQ(t->allocations, 5);
		CHECK_EQ(t->allocated_bytes, 13364);
		CHECK_EQ(t->frees, 3);
		CHECK_EQ(t->temporary, 1);
		CHECK_EQ(t->live_count, 2);
		CHECK_EQ(t->live_bytes, 8200);
		CHECK_EQ(t->peak_bytes, 8200);
		CHECK_EQ(t->peak_count, 2);
		CHECK_EQ(t->peak_ts, FX_T0 + 60 * FX_MS);
		CHECK_EQ(t->unmatched_frees, 0);
		CHECK_EQ(mt_process_lost(p), 0);
	}
	mt_recording_free(&r);
}

/* Cut at offset N: loads, truncated as TRUNC says, with the figures of the
 * first PARTS parts of the fixture. */
static void check_cut(const char *data, long n, int trunc, int parts)
{
	/* allocations, bytes, frees, leaked blocks, leaked bytes, temporary */
	static const uint64_t want[3][6] = {
		{ 2, 5100, 1, 1, 5000, 0 },
		{ 4, 5364, 2, 2, 5200, 1 },
		{ 5, 13364, 3, 2, 8200, 1 },
	};
	struct mt_recording r = { 0 };
	char err[256] = "";
	write_cut(data, n);
	int rc = mt_recording_load(&r, cut, err, sizeof err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "cut at %ld: %s\n", n, err);
		return;
	}
	CHECK(r.truncated == trunc);
	if (trunc)
		CHECK(r.why[0] != 0);
	const struct mt_totals *t = totals(&r);
	CHECK(t != NULL);
	if (t) {
		const uint64_t *w = want[parts - 1];
		CHECK_EQ(t->allocations, w[0]);
		CHECK_EQ(t->allocated_bytes, w[1]);
		CHECK_EQ(t->frees, w[2]);
		CHECK_EQ(t->live_count, w[3]);
		CHECK_EQ(t->live_bytes, w[4]);
		CHECK_EQ(t->temporary, w[5]);
		CHECK(r.procs[0]->exited == (parts == 3));
	}
	mt_recording_free(&r);
}

static void check_error(const char *file, const char *what)
{
	struct mt_recording r = { 0 };
	char err[256] = "";
	CHECK(mt_recording_load(&r, file, err, sizeof err) == -1);
	CHECK(err[0] != 0);
	printf("%s: %s\n", what, err);
	mt_recording_free(&r);
}

static void test_cuts(void)
{
	long ends[3];
	CHECK(fx_write(path, ends) == 0);
	static char data[1 << 16];
	int fd = open(path, O_RDONLY);
	long size = fd >= 0 ? (long)read(fd, data, sizeof data) : -1;
	close(fd);
	CHECK(size == ends[2]);
	if (size != ends[2])
		return;

	check_cut(data, ends[0] + MT_CHUNK_HEADER_SIZE / 2, 1, 1); /* in chunk 2's header */
	check_cut(data, (ends[0] + ends[1]) / 2, 1, 1);		   /* in chunk 2's data */
	check_cut(data, ends[1] - 1, 1, 1);			   /* its last byte missing */
	check_cut(data, ends[1] + 1, 1, 2);
	check_cut(data, (ends[1] + ends[2]) / 2, 1, 2);
	check_cut(data, ends[2] - 1, 1, 2);

	/* every length: no crash, never more than the whole file holds, and
	 * never less as the file grows */
	uint64_t prev = 0;
	for (long n = 0; n <= size; n++) {
		struct mt_recording r = { 0 };
		char err[256];
		write_cut(data, n);
		if (mt_recording_load(&r, cut, err, sizeof err) == 0) {
			const struct mt_totals *t = totals(&r);
			uint64_t a = t ? t->allocations : 0;
			CHECK(a <= 5 && a >= prev);
			/* the header alone is a recording of nothing yet */
			int whole = n == MT_FILE_HEADER_SIZE || n == ends[0] || n == ends[1] ||
				    n == ends[2];
			CHECK(r.truncated == !whole);
			CHECK(r.nprocs == (n != MT_FILE_HEADER_SIZE));
			prev = a;
		} else {
			/* refused: no whole header, or no whole chunk after it */
			CHECK(n < ends[0] && n != MT_FILE_HEADER_SIZE);
		}
		mt_recording_free(&r);
	}

	write_cut(data, 0);
	check_error(cut, "an empty file");
	write_cut(data, MT_FILE_HEADER_SIZE / 2);
	check_error(cut, "half a header");
	write_cut("#!/bin/sh\necho this is no recording\n", 36);
	check_error(cut, "a foreign file");
	check_error("/nonexistent/no-such-file.mtrace", "a missing file");
}

/* 40 chunks of a 1 MB marker and an allocation, each odd one also
 * freeing the block of the chunk before: 40 allocations, 20 frees, 20
 * blocks live (64 bytes each); 40 MB of chunks, more than the reading
 * thread keeps (MT_CHUNKS_INFLIGHT), so it waits for the figures. */
static void test_big_chunks(const char *dir)
{
	char big[4096];
	snprintf(big, sizeof big, "%s/recording-big.mtrace", dir);
	size_t pad = 1u << 20, cap = pad + 4096;
	uint8_t *buf = malloc(cap), *scratch = malloc(mt_chunk_bound(cap));
	struct mt_enc e = { 0 };
	z_stream zs = { 0 };
	int fd = mt_file_create(big);
	CHECK(buf && scratch && fd >= 0 && deflateInit(&zs, 1) == Z_OK);
	if (!buf || !scratch || fd < 0) {
		free(buf);
		free(scratch);
		return;
	}
	uint64_t pc = 0x401000;
	for (int i = 0; i < 40; i++) {
		uint8_t *p = buf;
		if (i == 0) {
			p = mt_enc_process(&e, p, 7, 1, 1000, FX_T0, "preload", "/bin/x", 6, "x",
					   2);
			p = mt_enc_stack(p, 1, &pc, 1);
		}
		/* a marker whose text says its chunk: read from the chunk's
		 * data by the figures' thread, after the decoding one moved on */
		memset(scratch, 'a' + i % 26, pad);
		p = mt_enc_marker(&e, p, FX_T0 + (uint64_t)i * 10, (uint64_t)i, (char *)scratch,
				  pad);
		p = mt_enc_nalloc(&e, p, MT_FN_MALLOC, FX_T0 + (uint64_t)i * 10, 64, 1);
		if (i % 2)
			p = mt_enc_nfree(&e, p, FX_T0 + (uint64_t)i * 10 + 5, e.serial - 1);
		CHECK(mt_chunk_write(fd, &zs, 0, buf, (size_t)(p - buf), scratch,
				     mt_chunk_bound(cap)) == 0);
	}
	deflateEnd(&zs);
	close(fd);
	free(buf);
	free(scratch);

	struct mt_recording r = { 0 };
	char err[256] = "";
	CHECK(mt_recording_load(&r, big, err, sizeof err) == 0);
	const struct mt_totals *t = totals(&r);
	CHECK(t && !r.truncated);
	if (t) {
		CHECK_EQ(t->allocations, 40);
		CHECK_EQ(t->frees, 20);
		CHECK_EQ(t->unmatched_frees, 0);
		CHECK_EQ(t->live_count, 20);
		CHECK_EQ(t->live_bytes, 20 * 64);
		CHECK_EQ(t->peak_count, 21);
		CHECK_EQ(r.procs[0]->pid, 7);
		const struct mt_process *pr = r.procs[0];
		CHECK_EQ(pr->nmarkers, 40);
		for (size_t i = 0; i < pr->nmarkers; i++) {
			const struct mt_marker *m = &pr->markers[i];
			size_t n = strlen(m->text);
			if (m->value != i || n != pad || m->text[0] != 'a' + (int)i % 26 ||
			    m->text[n - 1] != 'a' + (int)i % 26) {
				CHECK_EQ(i, 1000); /* marker I is not its chunk's */
				break;
			}
		}
	}
	mt_recording_free(&r);
	unlink(big);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	snprintf(path, sizeof path, "%s/recording-fixture.mtrace", dir);
	snprintf(cut, sizeof cut, "%s/recording-cut.mtrace", dir);
	test_cuts();
	test_whole();
	test_big_chunks(dir);
	if (failures) {
		fprintf(stderr, "recording: %d checks failed\n", failures);
		return 1;
	}
	printf("recording: all checks passed\n");
	return 0;
}

/*
 * test_recording.c - unit tests of the recording reader (analyse/recording.c)
 * on the fixture recording (../fixture.h): read whole, it gives the figures
 * the fixture derives; cut inside a chunk, it gives those of the chunks
 * before the cut with `truncated` set; cut at any byte it never crashes and
 * never counts more than the whole; an empty, foreign or headless file, or
 * one whose first chunk is cut, is an error with a reason (the header alone
 * is a recording of no process).
 */
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
	return r->nprocs == 1 ? &r->procs[0]->col.t : NULL;
}

static void test_whole(void)
{
	struct mt_recording r = {0};
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
		CHECK_EQ(p->col.nsites, 3);
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
		{2, 5100, 1, 1, 5000, 0},
		{4, 5364, 2, 2, 5200, 1},
		{5, 13364, 3, 2, 8200, 1},
	};
	struct mt_recording r = {0};
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
	struct mt_recording r = {0};
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
	check_cut(data, (ends[0] + ends[1]) / 2, 1, 1);             /* in chunk 2's data */
	check_cut(data, ends[1] - 1, 1, 1);                         /* its last byte missing */
	check_cut(data, ends[1] + 1, 1, 2);
	check_cut(data, (ends[1] + ends[2]) / 2, 1, 2);
	check_cut(data, ends[2] - 1, 1, 2);

	/* every length: no crash, never more than the whole file holds, and
	 * never less as the file grows */
	uint64_t prev = 0;
	for (long n = 0; n <= size; n++) {
		struct mt_recording r = {0};
		char err[256];
		write_cut(data, n);
		if (mt_recording_load(&r, cut, err, sizeof err) == 0) {
			const struct mt_totals *t = totals(&r);
			uint64_t a = t ? t->allocations : 0;
			CHECK(a <= 5 && a >= prev);
			/* the header alone is a recording of nothing yet */
			int whole = n == MT_FILE_HEADER_SIZE || n == ends[0] || n == ends[1] || n == ends[2];
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

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	snprintf(path, sizeof path, "%s/recording-fixture.mtrace", dir);
	snprintf(cut, sizeof cut, "%s/recording-cut.mtrace", dir);
	test_cuts();
	test_whole();
	if (failures) {
		fprintf(stderr, "recording: %d checks failed\n", failures);
		return 1;
	}
	printf("recording: all checks passed\n");
	return 0;
}

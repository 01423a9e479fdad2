/*
 * test_select.c - unit tests of a filtered load (analyse/select.c): the
 * fixture recording (../fixture.h), written through the recorder
 * (collect/writer.h: compacted, zstd chunks), is loaded through filters and
 * the matched figures, per process and per site, are the ones the fixture's
 * allocations give; `all` stays the whole; the replay hands out the matched
 * events only; a filtered load over another load of a file that grew since
 * reads only what that load read.
 */
#include "analyse/select.h"
#include "collect/writer.h"
#include "../fixture.h"

static char path[4096];

static void write_recording(void)
{
	char err[256] = "";
	static uint8_t buf[4096];
	struct mt_enc e = { 0 };
	struct mt_writer *r = mt_writer_open(path, 0, err, sizeof err);
	CHECK(r != NULL);
	if (!r) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	struct mt_stream *s = mt_stream_new(r);
	for (int part = 0; part < 3; part++)
		mt_stream_feed(s, buf, fx_part(&e, buf, part), 0);
	uint64_t lost[MT_LOST_KIND_COUNT] = { 0 };
	mt_stream_end(s, lost, 0, 0);
	CHECK(mt_writer_close(r) == 0);
}

/* The site of P whose leaf frame is LEAF, or NULL. */
static const struct mt_site_stats *site(const struct mt_process *p, uint64_t leaf)
{
	for (size_t i = 0; i < p->figures.nsites; i++)
		if (p->site_len[i] && p->frames[p->site_off[i]] == leaf)
			return &p->figures.sites[i];
	return NULL;
}

struct want {
	uint64_t allocations, bytes, frees, leaked, leaked_bytes, temporary, peak;
};

static void check_totals(const struct mt_totals *t, const struct want *w, const char *what)
{
	int before = failures;
	CHECK_EQ(t->allocations, w->allocations);
	CHECK_EQ(t->allocated_bytes, w->bytes);
	CHECK_EQ(t->frees, w->frees);
	CHECK_EQ(t->live_count, w->leaked);
	CHECK_EQ(t->live_bytes, w->leaked_bytes);
	CHECK_EQ(t->temporary, w->temporary);
	CHECK_EQ(t->peak_bytes, w->peak);
	if (failures != before)
		fprintf(stderr, "  (%s)\n", what);
}

/* Loads through KEY=VALUE (no filter when KEY is NULL) and checks the
 * matched totals, the whole recording in `all`, and the site of stack 2. */
static void check(const char *key, const char *value, struct want w, uint64_t stack2_allocs)
{
	static const struct want whole = { 5, 13364, 3, 2, 8200, 1, 8200 };
	struct mt_filter f;
	struct mt_selection s = { 0 };
	char err[256] = "";
	mt_filter_init(&f);
	if (key)
		CHECK(mt_filter_set(&f, key, value, err, sizeof err) == 0);
	int rc = mt_select_load(&s, path, &f, err, sizeof err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "%s\n", err);
		mt_filter_free(&f);
		return;
	}
	CHECK(s.filtered == (key != NULL));
	CHECK(s.all.nprocs == 1 && s.matched.nprocs == 1);
	if (s.all.nprocs == 1 && s.matched.nprocs == 1) {
		check_totals(&s.all.procs[0]->figures.t, &whole, "all");
		check_totals(&s.matched.procs[0]->figures.t, &w, key ? key : "no filter");
		const struct mt_site_stats *st = site(s.matched.procs[0], fx_stack2[0]);
		CHECK(st ? st->allocations == stack2_allocs : stack2_allocs == 0);
	}
	mt_select_free(&s);
	mt_filter_free(&f);
}

struct counts {
	int allocs, frees;
	uint64_t bytes;
};

static void on_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr, uint64_t size,
		     uint32_t site)
{
	struct counts *c = ctx;
	c->allocs++;
	c->bytes += size;
	CHECK(proc == 0 && tid == FX_PID && ts > FX_T0);
}

static void on_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	struct counts *c = ctx;
	c->frees++;
}

static void test_replay(void)
{
	struct mt_filter f;
	struct mt_selection s = { 0 };
	struct counts c = { 0 };
	char err[256] = "";
	mt_filter_init(&f);
	CHECK(mt_filter_set(&f, "size_min", "1000", err, sizeof err) == 0);
	CHECK(mt_select_load(&s, path, &f, err, sizeof err) == 0);
	struct mt_replay_ops ops = { .alloc = on_alloc, .free = on_free, .ctx = &c };
	CHECK(mt_select_replay(&s, &ops, err, sizeof err) == 0);
	/* B and B' (the realloc: B's free, then B' allocated) */
	CHECK(c.allocs == 2 && c.bytes == 13000 && c.frees == 1);
	mt_select_free(&s);
	mt_filter_free(&f);
}

/* A filtered load over the server's load of the file (mt_select_load_over),
 * after the file grew: the passes read as far as that load did, so the
 * figures and the replay are those of the file it saw, and `all` is its. */
static void test_over(void)
{
	struct mt_selection base = { 0 }, s = { 0 };
	struct mt_filter f;
	char err[256] = "";
	CHECK(mt_select_load(&base, path, NULL, err, sizeof err) == 0);
	/* the file grows: its chunks once more */
	FILE *fp = fopen(path, "r+b");
	CHECK(fp != NULL);
	if (!fp)
		return;
	static uint8_t bytes[1 << 20];
	size_t n = fread(bytes, 1, sizeof bytes, fp);
	size_t start = bytes[10] | (size_t)bytes[11] << 8;
	CHECK(n > start && n < sizeof bytes);
	CHECK(fwrite(bytes + start, 1, n - start, fp) == n - start);
	fclose(fp);
	mt_filter_init(&f);
	CHECK(mt_filter_set(&f, "size_min", "1000", err, sizeof err) == 0);
	CHECK(mt_select_load_over(&s, &base.all, path, &f, err, sizeof err) == 0);
	CHECK(s.borrowed && s.all.procs == base.all.procs && s.matched.nprocs == 1);
	if (s.matched.nprocs == 1)
		check_totals(&s.matched.procs[0]->figures.t,
			     &(struct want){ 2, 13000, 1, 1, 8000, 0, 8000 }, "over a grown file");
	struct counts c = { 0 };
	struct mt_replay_ops ops = { .alloc = on_alloc, .free = on_free, .ctx = &c };
	CHECK(mt_select_replay(&s, &ops, err, sizeof err) == 0);
	CHECK(c.allocs == 2 && c.bytes == 13000 && c.frees == 1);
	mt_select_free(&s);
	/* the borrowed load is still whole */
	CHECK(base.all.nprocs == 1);
	if (base.all.nprocs == 1)
		check_totals(&base.all.procs[0]->figures.t,
			     &(struct want){ 5, 13364, 3, 2, 8200, 1, 8200 }, "the borrowed load");
	mt_select_free(&base);
	mt_filter_free(&f);
}

int main(int argc, char **argv)
{
	snprintf(path, sizeof path, "%s/select-fixture.mtrace", argc > 1 ? argv[1] : ".");
	write_recording();
	/* allocations, bytes, frees, leaked, leaked bytes, temporary, peak */
	check(NULL, NULL, (struct want){ 5, 13364, 3, 2, 8200, 1, 8200 }, 2);
	check("size_min", "1000", (struct want){ 2, 13000, 1, 1, 8000, 0, 8000 }, 2);
	check("lifetime", "only_leaked", (struct want){ 2, 8200, 0, 2, 8200, 0, 8200 }, 1);
	check("lifetime", "only_temporary", (struct want){ 1, 64, 1, 0, 0, 1, 64 }, 0);
	check("size_max", "150", (struct want){ 2, 164, 2, 0, 0, 1, 100 }, 0);
	check("from", "0.045", (struct want){ 2, 8200, 0, 2, 8200, 0, 8200 }, 1);
	check("size_min", "100000", (struct want){ 0, 0, 0, 0, 0, 0, 0 }, 0);
	test_replay();
	test_over(); /* (last: it makes the file grow) */
	if (failures) {
		fprintf(stderr, "select: %d checks failed\n", failures);
		return 1;
	}
	printf("select: all checks passed\n");
	return 0;
}

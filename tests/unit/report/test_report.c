/*
 * test_report.c - unit tests of the report views (report/report.h) on the
 * fixture recording (../fixture.h): the text summary and the JSON report of
 * each view show the figures the fixture derives (totals, peak and its
 * time, leaks, temporaries, each site's figures and frames), rank the sites
 * by the view's measure and honour -n; frames written through the cache of
 * their texts (framejson.c) are written as without it.
 */
#include "report/report.h"
#include "../fixture.h"

#include <stdlib.h>

static char path[4096];

/* The output of a report of the fixture with O, as a string to free. */
static char *report(const struct mt_report_opts *o)
{
	struct mt_recording r = {0};
	char err[256] = "", *buf = NULL;
	size_t len = 0;
	CHECK(mt_recording_load(&r, path, err, sizeof err) == 0);
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	if (!f)
		exit(1);
	CHECK((o->json ? mt_report_json(f, &r, o) : mt_report_text(f, &r, o)) == 0);
	fclose(f);
	mt_recording_free(&r);
	return buf;
}

static int has(const char *text, const char *s)
{
	if (strstr(text, s))
		return 1;
	fprintf(stderr, "not in the output: %s\n", s);
	return 0;
}

/* Where S first occurs in TEXT (or the end). */
static size_t pos(const char *text, const char *s)
{
	const char *p = strstr(text, s);
	return p ? (size_t)(p - text) : strlen(text);
}

static void test_text(void)
{
	struct mt_report_opts o = {.view = MT_VIEW_SUMMARY, .pid = -1, .threshold = 1};
	char *t = report(&o);
	CHECK(has(t, "process 100 (fixture): /bin/fixture -x\n"));
	CHECK(has(t, "backend preload, 0.100 s, exit status 0\n"));
	CHECK(has(t, "allocations:     5 (13.4 KB)\n"));
	CHECK(has(t, "frees:           3\n"));
	CHECK(has(t, "temporary:       1 (20.0% of allocations)\n"));
	CHECK(has(t, "peak:            8.20 KB in 2 blocks, at 0.060 s\n"));
	CHECK(has(t, "leaked:          8.20 KB in 2 allocations\n"));
	CHECK(has(t, "lost events:     0\n"));
	/* sites by their leaf address (return address - 1: the call) */
	CHECK(has(t, "MEMORY LEAKS\n  8.00 KB leaked in 1 allocation from:\n    0x40110f\n    0x40201f\n"
		     "  200 B leaked in 1 allocation from:\n    0x40100f\n"));
	CHECK(has(t, "PEAK MEMORY CONSUMERS\n  8.00 KB at peak in 1 block (2 allocations) from:\n"));
	CHECK(has(t, "MOST TEMPORARY ALLOCATIONS\n  1 temporary of 1 allocation from:\n    0x40120f\n"
		     "    0x40211f\n    0x402fff\n"));
	CHECK(has(t, "  1 call to malloc (64 B) from:\n"));
	free(t);

	/* the leaks view: a tree of the 8200 leaked bytes, 8000 of them B' */
	o.view = MT_VIEW_LEAKS;
	t = report(&o);
	CHECK(has(t, "leaked: 8.20 KB in 2 allocations\n"));
	CHECK(has(t, "-> 97.56% (8.00 KB, 1x): 0x40110f\n"));
	CHECK(has(t, "-> 2.44% (200 B, 1x): 0x40100f\n"));
	CHECK(!strstr(t, "0x40120f")); /* C leaked nothing */
	free(t);
}

static void test_json(void)
{
	struct mt_report_opts o = {.view = MT_VIEW_SUMMARY, .json = 1, .pid = -1, .threshold = 1};
	char *j = report(&o);
	CHECK(has(j, "\"memtrace_report\": 1"));
	CHECK(has(j, "\"view\": \"summary\""));
	CHECK(has(j, "\"truncated\": false"));
	CHECK(has(j, "\"pid\": 100, \"ppid\": 1"));
	CHECK(has(j, "\"argv\": [\"fixture\", \"-x\"]"));
	CHECK(has(j, "\"duration_s\": 0.100000"));
	CHECK(has(j, "\"exit_status\": 0"));
	CHECK(has(j, "\"totals\": {\"allocations\": 5, \"frees\": 3, \"allocated_bytes\": 13364,"));
	CHECK(has(j, "\"peak_bytes\": 8200, \"peak_allocations\": 2, \"peak_time_s\": 0.060000,"));
	CHECK(has(j, "\"leaked_allocations\": 2, \"leaked_bytes\": 8200,"));
	CHECK(has(j, "\"runtime_held_allocations\": 0, \"runtime_held_bytes\": 0,"));
	CHECK(has(j, "\"temporary_allocations\": 1, \"unmatched_frees\": 0,"));
	CHECK(has(j, "\"lost_events\": 0"));
	/* every site with its figures */
	CHECK(has(j, "{\"allocations\": 2, \"allocated_bytes\": 13000, \"frees\": 1,\n"
		     "         \"leaked_allocations\": 1, \"leaked_bytes\": 8000,\n"
		     "         \"runtime_held_allocations\": 0, \"runtime_held_bytes\": 0,\n"
		     "         \"peak_bytes\": 8000, \"peak_allocations\": 1, \"temporary_allocations\": 0,\n"
		     "         \"culled_allocations\": 0, \"min_size\": 5000, \"max_size\": 8000,\n"
		     "         \"allocator\": \"malloc\""));
	CHECK(has(j, "{\"allocations\": 2, \"allocated_bytes\": 300, \"frees\": 1,\n"
		     "         \"leaked_allocations\": 1, \"leaked_bytes\": 200,\n"
		     "         \"runtime_held_allocations\": 0, \"runtime_held_bytes\": 0,\n"
		     "         \"peak_bytes\": 200, \"peak_allocations\": 1, \"temporary_allocations\": 0,\n"
		     "         \"culled_allocations\": 0, \"min_size\": 100, \"max_size\": 200,"));
	CHECK(has(j, "{\"allocations\": 1, \"allocated_bytes\": 64, \"frees\": 1,\n"
		     "         \"leaked_allocations\": 0, \"leaked_bytes\": 0,\n"
		     "         \"runtime_held_allocations\": 0, \"runtime_held_bytes\": 0,\n"
		     "         \"peak_bytes\": 0, \"peak_allocations\": 0, \"temporary_allocations\": 1,"));
	/* frames outside any module: named by their address */
	CHECK(has(j, "\"useful_frame\": 0, \"frames\": [{\"function\": null, \"file\": null, "
		     "\"line\": null, \"module\": null, \"address\": \"0x40120f\", \"offset\": \"0x0\", "
		     "\"inlined\": false, \"name\": \"0x40120f\"}, {\"function\": null, \"file\": null, "
		     "\"line\": null, \"module\": null, \"address\": \"0x40211f\", \"offset\": \"0x0\", "
		     "\"inlined\": false, \"name\": \"0x40211f\"}, {\"function\": null, \"file\": null, "
		     "\"line\": null, \"module\": null, \"address\": \"0x402fff\", \"offset\": \"0x0\", "
		     "\"inlined\": false, \"name\": \"0x402fff\"}]"));
	free(j);

	/* the temporary view ranks C first; the leaks view with -n 1 shows B'
	 * alone */
	o.view = MT_VIEW_TEMPORARY;
	j = report(&o);
	CHECK(has(j, "\"view\": \"temporary\""));
	CHECK(pos(j, "\"address\": \"0x40120f\"") < pos(j, "\"address\": \"0x40110f\""));
	CHECK(pos(j, "\"address\": \"0x40120f\"") < pos(j, "\"address\": \"0x40100f\""));
	free(j);
	o.view = MT_VIEW_LEAKS;
	o.limit = 1;
	j = report(&o);
	CHECK(has(j, "\"view\": \"leaks\""));
	CHECK(has(j, "\"leaked_bytes\": 8000,"));
	CHECK(has(j, "\"address\": \"0x40110f\""));
	CHECK(!strstr(j, "0x40100f") && !strstr(j, "0x40120f"));
	CHECK(has(j, "\"leaked_allocations\": 2, \"leaked_bytes\": 8200,"));
	CHECK(has(j, "\"runtime_held_allocations\": 0, \"runtime_held_bytes\": 0,")); /* the totals stay whole */
	free(j);
}

/* A process the recording saw no end of ran on after tracing stopped. */
static void test_still_running(void)
{
	struct mt_recording r;
	char err[512], *buf = NULL;
	size_t len = 0;
	struct mt_report_opts o = { .view = MT_VIEW_SUMMARY, .pid = -1, .threshold = 1 };
	CHECK(mt_recording_load(&r, path, err, sizeof err) == 0);
	r.procs[0]->exited = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		exit(1);
	CHECK(mt_report_text(f, &r, &o) == 0);
	fclose(f);
	CHECK(has(buf, "backend preload, 0.100 s, still running when tracing stopped\n"));
	free(buf);
	mt_recording_free(&r);
}

/* FR[0..N) as JSON, through cache C (NULL: none), as a string to free. */
static char *frames_json(const struct mt_frame *fr, int n, struct mt_frame_json *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		exit(1);
	mt_json_frames_cached(f, fr, n, c);
	fclose(f);
	return buf;
}

/* A frame's text kept by the cache is the text of that frame and of no
 * other: frames alike but for one field each are written as they are,
 * the first time and again. */
static void test_frame_cache(void)
{
	static const char fn[] = "f\"x", file[] = "a.c", mod[] = "/lib/m.so";
	const struct mt_frame base = { fn, file, 7, mod, 0x1234, 0x234, 0 };
	struct mt_frame fr[9];
	for (int i = 0; i < 9; i++)
		fr[i] = base;
	fr[1].line = 8;
	fr[2].inlined = 1;
	fr[3].function = NULL; /* named by module and offset */
	fr[4].function = NULL;
	fr[4].offset = 0x235;
	fr[5].file = NULL;
	fr[6].module = NULL;
	fr[7].address = 0x1235;
	/* fr[8] is fr[0] again */
	char *plain = frames_json(fr, 9, NULL);
	struct mt_frame_json *c = mt_frame_json_new();
	char *first = frames_json(fr, 9, c), *again = frames_json(fr, 9, c);
	CHECK(strcmp(first, plain) == 0);
	CHECK(strcmp(again, plain) == 0);
	CHECK(has(plain, "[{\"function\": \"f\\\"x\", \"file\": \"a.c\", \"line\": 7, "
			 "\"module\": \"/lib/m.so\", \"address\": \"0x1234\", \"offset\": "
			 "\"0x234\", \"inlined\": false, \"name\": \"f\\\"x\"}, {"));
	CHECK(has(plain, "\"name\": \"m.so+0x235\"}"));
	/* thousands alike but for their line or whether inlined: in a table
	 * half full many share a run of slots, where a key compared in part
	 * would find another's text */
	enum { MANY = 4096 };
	struct mt_frame *many = calloc(MANY, sizeof *many);
	if (!many)
		exit(1);
	for (int i = 0; i < MANY; i++) {
		many[i] = base;
		many[i].line = i / 2 + 1;
		many[i].inlined = i % 2;
	}
	char *many_plain = frames_json(many, MANY, NULL);
	char *many_first = frames_json(many, MANY, c), *many_again = frames_json(many, MANY, c);
	CHECK(strcmp(many_first, many_plain) == 0);
	CHECK(strcmp(many_again, many_plain) == 0);
	mt_frame_json_free(c);
	free(plain);
	free(first);
	free(again);
	free(many);
	free(many_plain);
	free(many_first);
	free(many_again);
}

int main(int argc, char **argv)
{
	snprintf(path, sizeof path, "%s/report-fixture.mtrace", argc > 1 ? argv[1] : ".");
	CHECK(fx_write(path, NULL) == 0);
	test_text();
	test_json();
	test_still_running();
	test_frame_cache();
	if (failures) {
		fprintf(stderr, "report: %d checks failed\n", failures);
		return 1;
	}
	printf("report: all checks passed\n");
	return 0;
}

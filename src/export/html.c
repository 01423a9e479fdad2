/*
 * html.c - one self-contained HTML page: each process's summary,
 * memory over time, an interactive flamegraph with a choice of weight, and
 * its call sites as a sortable table.  The page is report.html of
 * src/export/web with the CSS and scripts there pasted into its slots
 * (page.c walks the template), and the data as JSON in a <script
 * type="application/json"> (its shape: src/export/web/report.js); the
 * server's GUI draws the same page from its REST API.  Nothing is loaded
 * from elsewhere, and the page's content security policy forbids it.
 *
 * Memory over time comes from replaying the events into a fixed number of
 * time buckets: the highest heap in use of each, its allocations, and the
 * blocks never freed, counted where they were allocated.  For the server's
 * GUI (mt_web_report_data) the same replay also follows the live bytes of
 * the sites that allocated the most, for its sparklines; the html export
 * leaves them out.  Memory is bounded by the live blocks, the sites and the
 * distinct frames, never by events.
 *
 * After a leak scan (analyse/leakkinds.h), each process and site carries
 * the kinds of its blocks never freed, for the page's leak-kind selector.
 *
 * With --base, the page's flamegraph is differential: "diff" holds the call
 * sites of both recordings matched by what their frames say (analyse/diff.h)
 * with both sides' figures, and the page colours each frame by its change.
 */
#include "export.h"
#include "base/hash.h"
#include "base/ptrmap.h"
#include "base/slots.h"
#include "base/util.h"
#include "page.h"
#include "export/web/web.h"
#include "base/json.h"
#include "base/markup.h"
#include "analyse/diff.h"
#include "analyse/histo.h"
#include "sitetimes.h"
#include "analyse/mapped.h"

#include <stdlib.h>
#include <string.h>

#define BUCKETS 300
_Static_assert(BUCKETS == MT_ST_GRID, "the sites' times are in the chart's buckets");
/* Bits of a live block's map value that hold its bucket; the rest hold
 * its size. */
#define BUCKET_BITS 10
/* The server's GUI draws a sparkline of live bytes for this many call
 * sites (those that allocated the most) in this many steps: a bound on
 * the memory and on the size of its data, whatever the sites. */
#define SPARK_SITES 32
#define SPARK_BUCKETS 60

/* ---- memory over time ---- */

struct timeline {
	uint64_t t0, span; /* ns */
	uint64_t heap[BUCKETS], allocs[BUCKETS], frees[BUCKETS], leaked[BUCKETS];
	uint64_t temps[BUCKETS];   /* frees of temporary allocations */
	struct mt_ptrmap lastcall; /* thread + 1 -> the block its last call allocated */
	uint64_t cur;		   /* bytes in use */
	int last;		   /* bucket of the latest event, -1 before the first */
	struct mt_ptrmap live;	   /* block -> size << BUCKET_BITS | bucket */
	size_t nsites;
	/* per-site series (mt_web_report_data only, else NULL) */
	uint8_t *slot;			  /* per site: its series + 1, or 0 */
	uint64_t (*spark)[SPARK_BUCKETS]; /* highest live bytes per step */
	uint64_t scur[SPARK_SITES];	  /* live bytes of each */
	int nslots;
	struct mt_ptrmap tracked; /* blocks of those sites -> series */
	struct mt_histo histo;	  /* sizes and lifetimes */
	/* the sites' figures by time (the html export only, else NULL) */
	struct mt_site_times *times;
	/* The smallest step between two event times seen (ns; 0: none yet):
	 * what the clock that stamped them could tell apart, at most. */
	uint64_t last_ts, min_step;
};

/* Follows the event times for the smallest step between them. */
static void step(struct timeline *tl, uint64_t ts)
{
	if (ts > tl->last_ts) {
		uint64_t d = ts - tl->last_ts;
		if (tl->last_ts && (!tl->min_step || d < tl->min_step))
			tl->min_step = d;
		tl->last_ts = ts;
	}
}

/* The bucket of TS; every bucket since the previous event starts with the
 * heap as that event left it.  Events a thread logged a little out of
 * order fall into the current bucket. */
/* D * BUCKETS / SPAN for D < SPAN, exactly: in 128 bits where the compiler
 * has them, else in 64 (exact below 2^64 / BUCKETS ns, 1.9 years; beyond,
 * as near as SPAN / BUCKETS steps go). */
static int bucket_of(uint64_t d, uint64_t span)
{
#ifdef __SIZEOF_INT128__
	return (int)((unsigned __int128)d * BUCKETS / span);
#else
	if (d <= UINT64_MAX / BUCKETS)
		return (int)(d * BUCKETS / span);
	uint64_t b = d / (span / BUCKETS);
	return b < BUCKETS ? (int)b : BUCKETS - 1;
#endif
}

static int advance(struct timeline *tl, uint64_t ts)
{
	uint64_t d = ts > tl->t0 ? ts - tl->t0 : 0;
	int b = d >= tl->span ? BUCKETS - 1 : bucket_of(d, tl->span);
	if (b <= tl->last)
		return tl->last;
	for (int k = tl->last + 1; k <= b; k++) {
		tl->heap[k] = tl->cur;
		for (int i = 0; i < tl->nslots; i++)
			if (tl->spark[i][k * SPARK_BUCKETS / BUCKETS] < tl->scur[i])
				tl->spark[i][k * SPARK_BUCKETS / BUCKETS] = tl->scur[i];
	}
	return tl->last = b;
}

/* Returns 1 when PTR was a live block. */
static int drop(struct timeline *tl, uint64_t ptr)
{
	uint64_t v;
	if (!mt_ptrmap_take(&tl->live, ptr, &v))
		return 0;
	{
		uint64_t size = v >> BUCKET_BITS, i;
		tl->cur = tl->cur > size ? tl->cur - size : 0;
		if (tl->tracked.used && mt_ptrmap_take(&tl->tracked, ptr, &i))
			tl->scur[i] = tl->scur[i] > size ? tl->scur[i] - size : 0;
	}
	return 1;
}

/* A block of SITE allocated in bucket B, for the site's series. */
static void track(struct timeline *tl, uint64_t ptr, uint64_t size, uint32_t site, int b)
{
	if (!tl->slot || site >= tl->nsites || !tl->slot[site])
		return;
	int i = tl->slot[site] - 1;
	tl->scur[i] += size;
	uint64_t *v = &tl->spark[i][b * SPARK_BUCKETS / BUCKETS];
	if (*v < tl->scur[i])
		*v = tl->scur[i];
	mt_ptrmap_xput(&tl->tracked, ptr, (uint64_t)i);
}

/* An event the filter left out: its thread's last call allocated no
 * block of the page. */
static void on_touch(void *ctx, size_t proc, uint64_t ts, uint32_t tid)
{
	(void)ts;
	struct timeline *tl = ((struct timeline **)ctx)[proc];
	uint64_t v;
	if (tl)
		mt_ptrmap_take(&tl->lastcall, (uint64_t)tid + 1, &v);
}

static void on_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr, uint64_t size,
		     uint32_t site)
{
	struct timeline *tl = ((struct timeline **)ctx)[proc];
	if (!tl)
		return;
	int b = advance(tl, ts);
	step(tl, ts);
	/* a block handed out again without a free in between: the free was lost */
	drop(tl, ptr);
	if (size >> (64 - BUCKET_BITS))
		size = UINT64_MAX >> BUCKET_BITS;
	tl->cur += size;
	if (tl->cur > tl->heap[b])
		tl->heap[b] = tl->cur;
	tl->allocs[b]++;
	mt_ptrmap_xput(&tl->lastcall, (uint64_t)tid + 1, ptr);
	mt_histo_alloc(&tl->histo, ts, ptr, size);
	mt_ptrmap_xput(&tl->live, ptr, size << BUCKET_BITS | (uint64_t)b);
	track(tl, ptr, size, site, b);
	if (tl->times)
		mt_st_alloc(tl->times, ptr, size, site, tid, b);
}

static void on_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	struct timeline *tl = ((struct timeline **)ctx)[proc];
	if (!tl)
		return;
	int b = advance(tl, ts);
	step(tl, ts);
	mt_histo_free(&tl->histo, ts, ptr);
	/* temporary: freed by the very next call of its thread (the
	 * figures' rule, figures.c) */
	uint64_t lastp = 0;
	int was_last = mt_ptrmap_take(&tl->lastcall, (uint64_t)tid + 1, &lastp) && lastp == ptr;
	if (tl->times)
		mt_st_free(tl->times, ptr, was_last);
	if (drop(tl, ptr)) {
		tl->frees[b]++;
		tl->temps[b] += (uint64_t)was_last;
	}
}

/* After the replay: the heap carried to the end, and what is still live
 * (leaked) added up from the bucket each block was allocated in. */
static void timeline_finish(struct timeline *tl, const struct mt_process *p)
{
	if (tl->times)
		mt_st_finish(tl->times, p->figures.nsites, &p->figures);
	advance(tl, tl->t0 + tl->span);
	for (size_t i = 0; i <= tl->live.mask; i++)
		if (tl->live.keys[i])
			tl->leaked[tl->live.vals[i] & ((1u << BUCKET_BITS) - 1)] +=
				tl->live.vals[i] >> BUCKET_BITS;
	for (int b = 1; b < BUCKETS; b++)
		tl->leaked[b] += tl->leaked[b - 1];
	mt_ptrmap_destroy(&tl->live);
	mt_ptrmap_destroy(&tl->tracked);
	mt_ptrmap_destroy(&tl->lastcall);
	mt_histo_finish(&tl->histo);
}

/* Series for the SPARK_SITES sites of P that allocated the most bytes. */
static int series_new(struct timeline *tl, const struct mt_process *p)
{
	const struct mt_site_stats *st = p->figures.sites;
	tl->nsites = p->figures.nsites;
	tl->slot = xcalloc(tl->nsites ? tl->nsites : 1, 1);
	tl->spark = xcalloc(SPARK_SITES, sizeof *tl->spark);
	while (tl->nslots < SPARK_SITES) {
		size_t best = SIZE_MAX;
		for (size_t s = 0; s < tl->nsites; s++)
			if (st[s].allocations && !tl->slot[s] &&
			    (best == SIZE_MAX || st[s].allocated_bytes > st[best].allocated_bytes))
				best = s;
		if (best == SIZE_MAX)
			break;
		tl->slot[best] = (uint8_t)++tl->nslots;
	}
	return mt_ptrmap_init(&tl->tracked, 1u << 8);
}

static struct timeline *timeline_new(const struct mt_process *p, int series)
{
	struct timeline *tl = xcalloc(1, sizeof *tl);
	/* times count from the start, as in `memtrace report` */
	uint64_t t0 = p->start_ts, end = p->end_ts;
	if (p->figures.t.last_ts > end)
		end = p->figures.t.last_ts;
	tl->t0 = t0;
	tl->span = end > t0 ? end - t0 : 1;
	tl->last = -1;
	mt_histo_init(&tl->histo);
	if (!series) {
		tl->times = xcalloc(1, sizeof *tl->times);
		mt_st_init(tl->times);
	}
	if (mt_ptrmap_init(&tl->live, 1u << 12) < 0 || mt_ptrmap_init(&tl->lastcall, 1u << 6) < 0 ||
	    (series && series_new(tl, p) < 0)) {
		mt_ptrmap_destroy(&tl->live);
		mt_ptrmap_destroy(&tl->lastcall);
		mt_ptrmap_destroy(&tl->tracked);
		mt_blockrecs_destroy(&tl->histo.live);
		if (tl->times)
			mt_st_destroy(tl->times);
		free(tl->times);
		free(tl->slot);
		free(tl->spark);
		free(tl);
		return NULL;
	}
	return tl;
}

/* ---- JSON for a page ---- */

/* Whether the page gets the sites' times: a grid finer than the whole run. */
static int times_on(const struct timeline *tl)
{
	return tl->times && mt_st_has_times(tl->times);
}

/* And its threads' (a process of several). */
static int threads_on(const struct timeline *tl)
{
	return tl->times && mt_st_has_threads(tl->times);
}

static double secs(uint64_t ts, uint64_t t0)
{
	return ts > t0 ? (double)(ts - t0) / 1e9 : 0.0;
}

/* Distinct keys of four words, numbered in order of arrival: the files,
 * modules and frames of a process.  The symbolizer interns its strings, so
 * a string's address stands for its content. */
struct keytab {
	uint64_t (*keys)[4];
	size_t n, cap;
	uint32_t *slots; /* index + 1 */
	size_t mask;
};

static uint64_t key_hash(const uint64_t *k)
{
	uint64_t h = 0;
	for (int i = 0; i < 4; i++)
		h = mt_hash_combine(h, k[i]);
	return h;
}

static uint64_t entry_hash(const void *ctx, size_t i)
{
	const struct keytab *t = ctx;
	return key_hash(t->keys[i]);
}

static uint32_t key_index(struct keytab *t, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t k[4] = { a, b, c, d };
	if (mt_slots_full(t->n, t->mask))
		mt_slots_grow(&t->slots, &t->mask, 1024, 0, t->n, entry_hash, t);
	size_t j = key_hash(k) & t->mask;
	for (; t->slots[j]; j = (j + 1) & t->mask)
		if (!memcmp(t->keys[t->slots[j] - 1], k, sizeof k))
			return t->slots[j] - 1;
	mt_grow(&t->keys, &t->cap, t->n, sizeof *t->keys);
	memcpy(t->keys[t->n], k, sizeof k);
	t->slots[j] = (uint32_t)t->n + 1;
	return (uint32_t)t->n++;
}

static void key_free(struct keytab *t)
{
	free(t->keys);
	free(t->slots);
}

struct frametabs {
	struct keytab files, modules, frames;
	struct keytab stacks; /* (parent + 1, frame): the stacks as a tree */
};

static long string_index(struct keytab *t, const char *s)
{
	return s ? (long)key_index(t, (uintptr_t)s, 0, 0, 0) : -1;
}

/* A frame's number: by function, file, line, module and inlining, or, for
 * a frame without a symbol, by module and offset in it (its name then says
 * "module+0xoffset"; outside any module, the address). */
static uint32_t frame_index(struct frametabs *ft, const struct mt_frame *f)
{
	uint64_t what = f->function ? (uintptr_t)f->function : f->module ? f->offset : f->address;
	uint64_t flags = (uint64_t)(uint32_t)f->line << 2 | (uint64_t)(f->inlined != 0) << 1 |
			 (f->function != NULL);
	return key_index(&ft->frames, what, (uintptr_t)f->file, (uintptr_t)f->module, flags);
}

static void strings_json(FILE *f, const char *key, const struct keytab *t)
{
	fprintf(f, ",\n   \"%s\": [", key);
	for (size_t i = 0; i < t->n; i++) {
		if (i)
			fputc(',', f);
		mt_json_str_html(f, (const char *)(uintptr_t)t->keys[i][0]);
	}
	fputc(']', f);
}

static void frames_json(FILE *f, struct frametabs *ft)
{
	fputs(",\n   \"frame_fields\": [\"name\", \"file\", \"line\", \"module\", \"inlined\", \"symbolized\"],"
	      "\n   \"frames\": [",
	      f);
	char buf[300];
	/* files and modules get their numbers here, as the frames are written */
	for (size_t i = 0; i < ft->frames.n; i++) {
		const uint64_t *k = ft->frames.keys[i];
		struct mt_frame fr = {
			.function = k[3] & 1 ? (const char *)(uintptr_t)k[0] : NULL,
			.address = k[3] & 1 ? 0 : k[0],
			.offset = k[3] & 1 ? 0 : k[0],
			.file = (const char *)(uintptr_t)k[1],
			.module = (const char *)(uintptr_t)k[2],
		};
		fputs(i ? ",\n    [" : "\n    [", f);
		mt_json_str_html(f, mt_frame_name(&fr, buf, sizeof buf));
		fprintf(f, ",%ld,%u,%ld,%d,%d]", string_index(&ft->files, fr.file),
			(unsigned)(k[3] >> 2), string_index(&ft->modules, fr.module),
			(int)(k[3] >> 1 & 1), (int)(k[3] & 1));
	}
	fputc(']', f);
	strings_json(f, "files", &ft->files);
	strings_json(f, "modules", &ft->modules);
}

/* The live bytes of site S over time, when it has a series: a last field
 * of its row. */
static void site_series_json(FILE *f, const struct timeline *tl, uint32_t s)
{
	if (!tl->slot)
		return;
	if (s >= tl->nsites || !tl->slot[s]) {
		fputs(",null", f);
		return;
	}
	const uint64_t *v = tl->spark[tl->slot[s] - 1];
	for (int b = 0; b < SPARK_BUCKETS; b++)
		fprintf(f, b ? ",%llu" : ",[%llu", (unsigned long long)v[b]);
	fputc(']', f);
}

/* The leak scan's kinds of site S's leaked blocks, when a scan ran: its
 * fields after the temporaries. */
static void site_kinds_json(FILE *f, const struct mt_process *p, uint32_t s)
{
	if (!p->kinds.sites)
		return;
	for (int k = 0; k < MT_LEAK_KINDS; k++) {
		const struct mt_kind_figures *x = &p->kinds.sites[s];
		int in = s < p->kinds.nsites;
		fprintf(f, "%llu,%llu,", in ? (unsigned long long)x->count[k] : 0ULL,
			in ? (unsigned long long)x->bytes[k] : 0ULL);
	}
}

/* "leak_kinds": what the leak scan at the end found the leaked blocks to
 * be (the JSON report's keys), or null when no scan ran. */
static void leak_kinds_json(FILE *f, const struct mt_process *p)
{
	const struct mt_leak_kinds *k = &p->kinds;
	fputs(",\n   \"leak_kinds\": ", f);
	if (!k->ran) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"complete\": %s, \"why\": ", k->scan.complete ? "true" : "false");
	if (k->why)
		mt_json_str_html(f, k->why);
	else
		fputs("null", f);
	for (int i = 0; i < MT_LEAK_KINDS; i++)
		fprintf(f, ", \"%s_allocations\": %llu, \"%s_bytes\": %llu", mt_leak_kind_names[i],
			(unsigned long long)k->total.count[i], mt_leak_kind_names[i],
			(unsigned long long)k->total.bytes[i]);
	fputc('}', f);
}

static void sites_json(FILE *f, const struct mt_process *p, const struct timeline *tl,
		       struct frametabs *ft)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	/* A site names the node of its leaf frame in a tree of the stacks,
	 * which share their outer frames: 100,000 sites of 20 frames are a
	 * few MB, not 10. */
	fputs(",\n   \"site_fields\": [\"allocations\", \"allocated_bytes\", \"leaked_allocations\", "
	      "\"leaked_bytes\", \"peak_bytes\", \"temporary_allocations\"",
	      f);
	if (p->kinds.sites)
		for (int k = 0; k < MT_LEAK_KINDS; k++)
			fprintf(f, ", \"%s_allocations\", \"%s_bytes\"", mt_leak_kind_names[k],
				mt_leak_kind_names[k]);
	fputs(", \"stack\"", f);
	if (tl->slot)
		fputs(", \"live_series\"", f);
	if (times_on(tl))
		fputs(", \"times\"", f);
	if (threads_on(tl))
		fputs(", \"by_thread\"", f);
	fputs("],\n   \"sites\": [", f);
	int first = 1;
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		const struct mt_site_stats *st = &p->figures.sites[s];
		if (!st->allocations && !st->live_count && !st->peak_bytes)
			continue;
		fprintf(f, "%s\n    [%llu,%llu,%llu,%llu,%llu,%llu,", first ? "" : ",",
			(unsigned long long)st->allocations,
			(unsigned long long)st->allocated_bytes, (unsigned long long)st->live_count,
			(unsigned long long)st->live_bytes, (unsigned long long)st->peak_bytes,
			(unsigned long long)st->temporary);
		first = 0;
		site_kinds_json(f, p, s);
		int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		long node = -1;
		for (int k = n - 1; k >= 0; k--)
			node = key_index(&ft->stacks, (uint64_t)(node + 1), frame_index(ft, &fr[k]),
					 0, 0);
		fprintf(f, "%ld", node);
		site_series_json(f, tl, s);
		if (times_on(tl))
			mt_st_site_json(f, tl->times, 0, s, st);
		if (threads_on(tl))
			mt_st_site_json(f, tl->times, 1, s, st);
		fputc(']', f);
	}
	fputs("],\n   \"stack_fields\": [\"frame\", \"parent\"],\n   \"stacks\": [", f);
	for (size_t i = 0; i < ft->stacks.n; i++)
		fprintf(f, "%s[%llu,%lld]", i ? "," : "", (unsigned long long)ft->stacks.keys[i][1],
			(long long)ft->stacks.keys[i][0] - 1);
	fputc(']', f);
	/* the frames point into the symbolizer's strings: written before it goes */
	frames_json(f, ft);
	mt_sym_free(sym);
}

static void series_json(FILE *f, const char *key, const uint64_t *v)
{
	fprintf(f, ",\n    \"%s\": [", key);
	for (int b = 0; b < BUCKETS; b++)
		fprintf(f, b ? ",%llu" : "%llu", (unsigned long long)v[b]);
	fputc(']', f);
}

/* The process's memory samples (record's RSS) in the timeline's buckets:
 * resident memory and its anonymous part, the most of each bucket,
 * carried over buckets no sample fell in.  Nothing without samples.
 * (VmData is not drawn: it counts address space reserved and never
 * touched, thread stacks' included, which dwarfs the rest.) */
static void resident_json(FILE *f, const struct timeline *tl, const struct mt_process *p)
{
	if (!p->nrss)
		return;
	uint64_t *rss = xcalloc(2 * BUCKETS, sizeof *rss), *mapped = rss + BUCKETS;
	int *seen = xcalloc(BUCKETS, sizeof *seen);
	for (size_t i = 0; i < p->nrss; i++) {
		const struct mt_rss_sample *m = &p->rss[i];
		uint64_t d = m->ts > tl->t0 ? m->ts - tl->t0 : 0;
		int b = d >= tl->span ? BUCKETS - 1 : bucket_of(d, tl->span);
		if (m->m.rss > rss[b])
			rss[b] = m->m.rss;
		if (m->m.anon > mapped[b])
			mapped[b] = m->m.anon;
		seen[b] = 1;
	}
	/* before the first sample (the recorder's first look comes a few ms
	 * into the run), the first one */
	int first = 0;
	while (first < BUCKETS - 1 && !seen[first])
		first++;
	for (int b = 0; b < BUCKETS; b++)
		if (!seen[b]) {
			rss[b] = b < first ? rss[first] : rss[b - 1];
			mapped[b] = b < first ? mapped[first] : mapped[b - 1];
		}
	series_json(f, "rss_bytes", rss);
	series_json(f, "rss_anon_bytes", mapped);
	free(rss);
	free(seen);
}

/* The mapped memory (analyse/mapped.h) in the timeline's buckets: the most
 * of each bucket, what the last call left carried over buckets without
 * calls.  Nothing without mapping calls. */
struct mapped_buckets {
	const struct timeline *tl;
	uint64_t *most, *last;
	int *seen;
};

static void mapped_bucket(void *ctx, const struct mt_mapev *e, uint64_t bytes)
{
	struct mapped_buckets *m = ctx;
	uint64_t d = e->ts > m->tl->t0 ? e->ts - m->tl->t0 : 0;
	int b = d >= m->tl->span ? BUCKETS - 1 : bucket_of(d, m->tl->span);
	if (!m->seen[b] || bytes > m->most[b])
		m->most[b] = bytes;
	m->last[b] = bytes;
	m->seen[b] = 1;
}

static void mapped_json(FILE *f, const struct timeline *tl, const struct mt_process *p)
{
	if (!p->nmaps)
		return;
	struct mapped_buckets m = { tl, xcalloc(2 * BUCKETS, sizeof *m.most), NULL,
				    xcalloc(BUCKETS, sizeof *m.seen) };
	m.last = m.most + BUCKETS;
	mt_mapped_walk(p, mapped_bucket, &m);
	uint64_t carry = 0; /* before the first call: nothing mapped by one */
	for (int b = 0; b < BUCKETS; b++) {
		if (!m.seen[b]) {
			m.most[b] = carry;
			continue;
		}
		if (carry > m.most[b])
			m.most[b] = carry;
		carry = m.last[b];
	}
	series_json(f, "mapped_bytes", m.most);
	free(m.most);
	free(m.seen);
}

static void timeline_json(FILE *f, const struct timeline *tl, const struct mt_process *p)
{
	fprintf(f, ",\n   \"timeline\": {\"bucket_s\": %.9g, \"time_step_s\": ",
		(double)tl->span / 1e9 / BUCKETS);
	if (tl->min_step)
		fprintf(f, "%.9g", (double)tl->min_step / 1e9);
	else
		fputs("null", f);
	series_json(f, "heap_bytes", tl->heap);
	series_json(f, "allocations", tl->allocs);
	series_json(f, "frees", tl->frees);
	series_json(f, "temporary", tl->temps);
	series_json(f, "leaked_bytes", tl->leaked);
	resident_json(f, tl, p);
	mapped_json(f, tl, p);
	/* the grid of the sites' "times" (sitetimes.h), in the chart's buckets */
	if (times_on(tl))
		fprintf(f, ",\n    \"site_cells\": %d", tl->times->cells);
	fputc('}', f);
}

static void process_json(FILE *f, const struct mt_process *p, const struct timeline *tl,
			 const struct mt_filter *flt, int is_main)
{
	const struct mt_totals *t = &p->figures.t;
	fputs("  {", f);
	mt_json_identity(f, p, ", ", 1);
	fprintf(f, ",\n   \"main\": %s, \"duration_s\": %.6f, ", is_main ? "true" : "false",
		mt_process_duration(p));
	mt_json_span(f, flt, p);
	fprintf(f, ", \"start_unix_s\": %.3f, \"exit_status\": ", (double)p->unix_ns / 1e9);
	if (p->exited)
		fprintf(f, "%lld", (long long)p->exit_status);
	else
		fputs("null", f);
	if (mt_process_signal_name(p))
		fprintf(f, ", \"signal\": \"%s\"", mt_process_signal_name(p));
	if (p->exec_outcome) {
		fputs(", \"exec_path\": ", f);
		mt_json_str_html(f, p->exec_path);
	}
	fprintf(f,
		", \"lost_events\": %llu,\n   \"totals\": {\"allocations\": %llu, \"frees\": %llu, "
		"\"allocated_bytes\": %llu, \"peak_bytes\": %llu, \"peak_allocations\": %llu, \"peak_time_s\": %.6f, "
		"\"leaked_allocations\": %llu, \"leaked_bytes\": %llu, \"runtime_held_allocations\": %llu, "
		"\"runtime_held_bytes\": %llu, \"temporary_allocations\": %llu, "
		"\"unmatched_frees\": %llu, \"culled_allocations\": %llu}",
		(unsigned long long)mt_process_lost(p), (unsigned long long)t->allocations,
		(unsigned long long)t->frees, (unsigned long long)t->allocated_bytes,
		(unsigned long long)t->peak_bytes, (unsigned long long)t->peak_count,
		secs(t->peak_ts, tl->t0), (unsigned long long)t->live_count,
		(unsigned long long)t->live_bytes, (unsigned long long)t->held_count,
		(unsigned long long)t->held_bytes, (unsigned long long)t->temporary,
		(unsigned long long)t->unmatched_frees, (unsigned long long)t->culled);
	leak_kinds_json(f, p);
	timeline_json(f, tl, p);
	mt_json_histo(f, &tl->histo);
	fputs(",\n   \"markers\": [", f);
	for (size_t i = 0; i < p->nmarkers; i++) {
		fprintf(f, "%s{\"time_s\": %.6f, \"value\": %llu, \"text\": ", i ? ", " : "",
			secs(p->markers[i].ts, tl->t0), (unsigned long long)p->markers[i].value);
		mt_json_str_html(f, p->markers[i].text);
		fputc('}', f);
	}
	/* the calls that tuned the allocator, drawn on the timeline as markers
	 * are (value 0: no marker of the program's has it) */
	for (size_t i = 0; i < p->ntunes; i++) {
		char text[128];
		fprintf(f, "%s{\"time_s\": %.6f, \"value\": 0, \"text\": ",
			p->nmarkers || i ? ", " : "", secs(p->tunes[i].ts, tl->t0));
		mt_json_str_html(f, mt_tune_text(&p->tunes[i], text, sizeof text));
		fputc('}', f);
	}
	fputc(']', f);
	fputs(",\n   \"threads\": ", f);
	mt_json_threads(f, p);
	/* the threads of the sites' "by_thread", by number */
	if (threads_on(tl)) {
		fputs(",\n   \"site_threads\": ", f);
		mt_st_tids_json(f, tl->times);
	}
	struct frametabs ft = { 0 };
	sites_json(f, p, tl, &ft);
	key_free(&ft.files);
	key_free(&ft.modules);
	key_free(&ft.frames);
	key_free(&ft.stacks);
	fputs("}", f);
}

/* ---- the differential flamegraph (--base) ---- */

static void stats_json(FILE *f, const struct mt_site_stats *st)
{
	fprintf(f, "%llu,%llu,%llu,%llu,%llu,%llu,", (unsigned long long)st->allocations,
		(unsigned long long)st->allocated_bytes, (unsigned long long)st->live_count,
		(unsigned long long)st->live_bytes, (unsigned long long)st->peak_bytes,
		(unsigned long long)st->temporary);
}

static int stats_empty(const struct mt_site_stats *st)
{
	return !st->allocations && !st->live_count && !st->peak_bytes;
}

/* "diff": the sites of every selected process of the recording and of
 * every process of the base, matched by their frames' names (pids differ
 * between runs, so the processes are merged), each with its figures in
 * both; the shape of a process's sites, with base_* fields. */
static void diff_json(FILE *f, struct mt_export_ctx *x)
{
	const struct mt_recording *rec = &x->sel->matched;
	struct mt_recording now = *rec; /* the processes --pid selects */
	now.procs = xcalloc(rec->nprocs + 1, sizeof *now.procs);
	now.nprocs = 0;
	const char *exe = NULL;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (mt_export_wants(x, rec->procs[i])) {
			now.procs[now.nprocs++] = rec->procs[i];
			if (!exe)
				exe = rec->procs[i]->exe;
		}
	struct mt_diff d = { 0 };
	mt_diff_build(&d, &x->base->matched, &now);
	fputs(",\n \"diff\": {\"base\": ", f);
	mt_json_str_html(f, x->base->path);
	fputs(", \"exe\": ", f);
	if (exe)
		mt_json_str_html(f, exe);
	else
		fputs("null", f);
	fputs(",\n   \"site_fields\": [\"allocations\", \"allocated_bytes\", \"leaked_allocations\", "
	      "\"leaked_bytes\", \"peak_bytes\", \"temporary_allocations\", \"base_allocations\", "
	      "\"base_allocated_bytes\", \"base_leaked_allocations\", \"base_leaked_bytes\", "
	      "\"base_peak_bytes\", \"base_temporary_allocations\", \"frames\"],\n   \"sites\": [",
	      f);
	/* the diff interns its strings: one address per content, as the
	 * frame table needs */
	struct frametabs ft = { 0 };
	int first = 1;
	for (size_t s = 0; s < d.n; s++) {
		const struct mt_diff_site *ds = &d.sites[s];
		if (stats_empty(&ds->new) && stats_empty(&ds->base))
			continue;
		fputs(first ? "\n    [" : ",\n    [", f);
		first = 0;
		stats_json(f, &ds->new);
		stats_json(f, &ds->base);
		fputc('[', f);
		for (int k = 0; k < ds->nframes; k++)
			fprintf(f, k ? ",%u" : "%u", frame_index(&ft, &ds->frames[k]));
		fputs("]]", f);
	}
	fputc(']', f);
	frames_json(f, &ft);
	fputc('}', f);
	key_free(&ft.files);
	key_free(&ft.modules);
	key_free(&ft.frames);
	mt_diff_free(&d);
	free(now.procs);
}

static void data_json(struct mt_export_ctx *x, struct timeline **tls)
{
	FILE *f = x->out;
	struct mt_recording *rec = &x->sel->matched;
	fputs("{\"memtrace_html\": 1, \"recording\": ", f);
	mt_json_str_html(f, x->sel->path);
	fprintf(f, ", \"truncated\": %s, \"filtered\": %s, \"weight\": ",
		x->sel->all.truncated ? "true" : "false", x->sel->filtered ? "true" : "false");
	/* without --weight, the page picks by what each process holds: its
	 * leaks, else its peak */
	if (x->weight_set)
		fprintf(f, "\"%s\",\n", mt_weight_names[x->weight]);
	else
		fputs("null,\n", f);
	fputs(" \"filter\": ", f);
	mt_json_filter(f, x->sel->filter, 1);
	fputs(",\n \"processes\": [\n", f);
	int n = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		if (!tls[i])
			continue;
		if (n++)
			fputs(",\n", f);
		process_json(f, rec->procs[i], tls[i], x->sel->filter,
			     rec->procs[i] == mt_recording_main(rec));
	}
	fputs("\n]", f);
	if (x->base)
		diff_json(f, x);
	fputc('}', f);
}

/* ---- the page ---- */

/* The assets SLOT names, one after the other. */
static int paste(FILE *f, const struct mt_page_slot *slot, char *err, size_t errlen)
{
	char name[64];
	const char *arg;
	size_t pos = 0, len;
	while (mt_page_slot_arg(slot, &pos, &arg, &len)) {
		snprintf(name, sizeof name, "%.*s", (int)len, arg);
		const struct mt_web_asset *a = mt_web_asset(name);
		if (!a) {
			snprintf(err, errlen, "the page template names %s, which was not built in",
				 name);
			return -1;
		}
		fwrite(a->data, 1, a->len, f);
		fputc('\n', f);
	}
	return 0;
}

static const char *page_title(const struct mt_export_ctx *x, struct timeline **tls)
{
	const struct mt_recording *rec = &x->sel->matched;
	const char *one = NULL;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (tls[i]) {
			if (one)
				return NULL;
			one = rec->procs[i]->exe;
		}
	return one;
}

struct page {
	struct mt_export_ctx *x;
	struct timeline **tls;
};

/* One {{slot}} of report.html: the title, the policy, the assets pasted
 * in, the data. */
static int fill_slot(void *ctx, FILE *f, const struct mt_page_slot *slot, char *err, size_t errlen)
{
	const struct page *pg = ctx;
	if (mt_page_slot_is(slot, "title")) {
		const char *exe = page_title(pg->x, pg->tls);
		const char *base = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
		fputs("memtrace: ", f);
		mt_markup_str(f, base ? base : pg->x->sel->path, -1);
	} else if (mt_page_slot_is(slot, "policy")) {
		fputs("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">",
		      f);
	} else if (mt_page_slot_is(slot, "style")) {
		fputs("<style>\n", f);
		if (paste(f, slot, err, errlen) < 0)
			return -1;
		fputs("</style>", f);
	} else if (mt_page_slot_is(slot, "script")) {
		fputs("<script>\n", f);
		if (paste(f, slot, err, errlen) < 0)
			return -1;
		fputs("</script>", f);
	} else if (mt_page_slot_is(slot, "data")) {
		fputs("<script type=\"application/json\" id=\"memtrace-data\">\n", f);
		data_json(pg->x, pg->tls);
		fputs("\n</script>", f);
	} else {
		snprintf(err, errlen, "the page template has an unknown slot {{%.*s}}",
			 (int)(slot->name_len + slot->args_len), slot->name);
		return -1;
	}
	return 0;
}

static void timelines_free(const struct mt_recording *rec, struct timeline **tls)
{
	for (size_t i = 0; i < rec->nprocs; i++) {
		if (tls[i]) {
			mt_ptrmap_destroy(&tls[i]->live);
			mt_ptrmap_destroy(&tls[i]->tracked);
			mt_ptrmap_destroy(&tls[i]->lastcall);
			mt_blockrecs_destroy(&tls[i]->histo.live);
			if (tls[i]->times)
				mt_st_destroy(tls[i]->times);
			free(tls[i]->times);
			free(tls[i]->slot);
			free(tls[i]->spark);
		}
		free(tls[i]);
	}
	free(tls);
}

/* The timeline of each process X selects (NULL for the others), or NULL
 * with a reason in ERR. */
static struct timeline **timelines(struct mt_export_ctx *x, int series, char *err, size_t errlen)
{
	struct mt_recording *rec = &x->sel->matched;
	struct timeline **tls = xcalloc(rec->nprocs + 1, sizeof *tls);
	for (size_t i = 0; i < rec->nprocs; i++) {
		if (mt_export_wants(x, rec->procs[i]) &&
		    !(tls[i] = timeline_new(rec->procs[i], series))) {
			snprintf(err, errlen, "out of memory for the timeline");
			timelines_free(rec, tls);
			return NULL;
		}
	}
	struct mt_replay_ops ops = { on_alloc, on_free, tls, on_touch };
	if (mt_select_replay(x->sel, &ops, err, errlen) < 0) {
		timelines_free(rec, tls);
		return NULL;
	}
	for (size_t i = 0; i < rec->nprocs; i++)
		if (tls[i])
			timeline_finish(tls[i], rec->procs[i]);
	return tls;
}

int mt_web_report_data(struct mt_export_ctx *x, char *err, size_t errlen)
{
	struct timeline **tls = timelines(x, 1, err, errlen);
	if (!tls)
		return -1;
	data_json(x, tls);
	fputc('\n', x->out);
	timelines_free(&x->sel->matched, tls);
	return 0;
}

int mt_export_html(struct mt_export_ctx *x, char *err, size_t errlen)
{
	struct timeline **tls = timelines(x, 0, err, errlen);
	if (!tls)
		return -1;
	struct page pg = { .x = x, .tls = tls };
	int r = mt_page_write(x->out, fill_slot, &pg, err, errlen);
	timelines_free(&x->sel->matched, tls);
	return r;
}

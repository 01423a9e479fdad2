/*
 * top.c - see top.h.
 *
 * Symbolizers are kept per process between tables: building one opens every
 * object's debug information, which is worth doing once, not every second.
 *
 * On the screen, rows whose first frames read the same (an allocation
 * wrapper called from everywhere) are told apart by the first frame where
 * their stacks part: "node_alloc < (+3) < load_config" rather than four
 * frames that every such row shares.
 */
#include "top.h"
#include "base/hash.h"
#include "base/ptrmap.h"
#include "report.h"
#include "base/util.h"
#include "base/json.h"
#include "fit.h"

#include <stdlib.h>
#include <string.h>

struct cached_sym {
	uint32_t pid;
	size_t nmodules;
	struct mt_symbolizer *sym;
};

struct mt_top {
	struct cached_sym *syms;
	size_t nsyms, syms_cap;
	struct mt_ptrmap prev;	/* (pid, stack) key -> allocations at the last table */
	struct mt_ptrmap rates; /* (pid, stack) key -> its rate then (a double's bits) */
	double prev_time;
	enum mt_top_sort sort;
};

struct mt_top *mt_top_new(void)
{
	struct mt_top *t = xcalloc(1, sizeof *t);
	mt_ptrmap_xinit(&t->prev, 1u << 12);
	mt_ptrmap_xinit(&t->rates, 1u << 12);
	t->prev_time = -1;
	return t;
}

void mt_top_free(struct mt_top *t)
{
	for (size_t i = 0; i < t->nsyms; i++)
		mt_sym_free(t->syms[i].sym);
	free(t->syms);
	mt_ptrmap_destroy(&t->prev);
	mt_ptrmap_destroy(&t->rates);
	free(t);
}

void mt_top_sort_by(struct mt_top *t, enum mt_top_sort sort)
{
	t->sort = sort;
}

struct mt_symbolizer *mt_top_symbolizer(struct mt_top *t, const struct mt_process *p)
{
	for (size_t i = 0; i < t->nsyms; i++) {
		struct cached_sym *c = &t->syms[i];
		if (c->pid != p->pid)
			continue;
		if (c->nmodules != p->nmodules) {
			mt_sym_free(c->sym);
			c->sym = mt_process_symbolizer(p);
			c->nmodules = p->nmodules;
		}
		return c->sym;
	}
	mt_grow(&t->syms, &t->syms_cap, t->nsyms, sizeof *t->syms);
	struct cached_sym *c = &t->syms[t->nsyms++];
	c->pid = p->pid;
	c->nmodules = p->nmodules;
	c->sym = mt_process_symbolizer(p);
	return c->sym;
}

struct row {
	const struct mt_process *p;
	uint32_t site;
	uint64_t bytes, count, allocations, key;
	double rate;
};

static int by_bytes(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->count > y->count ? -1 : x->count < y->count;
}

static int by_blocks(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return by_bytes(a, b);
}

static int by_rate(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	return by_bytes(a, b);
}

static uint64_t row_key(const struct mt_process *p, uint32_t site)
{
	uint64_t h = mt_hash64(p->pid);
	const uint64_t *f = p->frames + p->site_off[site];
	for (uint32_t i = 0; i < p->site_len[site]; i++)
		h = mt_hash_combine(h, f[i]);
	return h | 1;
}

/* Allocations per second of a row since the previous table (or since
 * tracing began); remembers its count for the next. */
static double rate_of(struct mt_top *t, const struct row *r, double dt)
{
	uint64_t before = 0; /* stored + 1, so that 0 means "not seen" */
	int seen = mt_ptrmap_take(&t->prev, r->key, &before);
	mt_ptrmap_xput(&t->prev, r->key, r->allocations + 1);
	if (dt <= 0)
		return 0;
	return (double)(r->allocations - (seen ? before - 1 : 0)) / dt;
}

/* The rows of SNAP (every site of every process), sorted as T says, with
 * their rates: since the last table when ADVANCE (which then becomes the
 * last), else the rates that table gave (the same interval drawn again).
 * *TOTAL: the bytes outstanding. */
static struct row *collect(struct mt_top *t, struct mt_recording *snap, double time_s, int advance,
			   size_t *nrows_out, uint64_t *total)
{
	size_t nrows = 0, cap = 0;
	struct row *rows = NULL;
	*total = 0;
	for (size_t i = 0; i < snap->nprocs; i++) {
		const struct mt_process *p = snap->procs[i];
		for (uint32_t s = 0; s < p->figures.nsites; s++) {
			const struct mt_site_stats *st = &p->figures.sites[s];
			mt_grow(&rows, &cap, nrows, sizeof *rows);
			rows[nrows++] = (struct row){
				p, s, st->live_bytes, st->live_count, st->allocations, row_key(p, s)
			};
			*total += st->live_bytes;
		}
	}
	double dt = t->prev_time >= 0 ? time_s - t->prev_time : time_s;
	/* rates of every row, shown or not, so that a site entering the top N
	 * has its rate over the last interval, not since it was last shown */
	for (size_t r = 0; r < nrows; r++) {
		uint64_t bits = 0;
		if (advance) {
			rows[r].rate = rate_of(t, &rows[r], dt);
			memcpy(&bits, &rows[r].rate, sizeof bits);
			mt_ptrmap_xput(&t->rates, rows[r].key, bits);
		} else if (mt_ptrmap_get(&t->rates, rows[r].key, &bits)) {
			memcpy(&rows[r].rate, &bits, sizeof bits);
		}
	}
	if (advance)
		t->prev_time = time_s;
	if (nrows)
		qsort(rows, nrows, sizeof *rows,
		      t->sort == MT_TOP_BLOCKS ? by_blocks :
		      t->sort == MT_TOP_RATE   ? by_rate :
						 by_bytes);
	*nrows_out = nrows;
	return rows;
}

void mt_top_print(struct mt_top *t, FILE *f, struct mt_recording *snap, double time_s, long n,
		  int json)
{
	size_t nrows;
	uint64_t total;
	struct row *rows = collect(t, snap, time_s, 1, &nrows, &total);
	size_t shown = n > 0 && (size_t)n < nrows ? (size_t)n : nrows;
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	char a[32], b[32], c[32];
	/* sampled (--sample): every figure is an estimate */
	uint64_t sampled = snap->nprocs ? snap->procs[0]->figures.sample_mean : 0;
	if (json) {
		fprintf(f, "{\"time_s\": %.3f, ", time_s);
		if (sampled)
			fprintf(f, "\"sampled\": {\"mean_bytes\": %llu}, ",
				(unsigned long long)sampled);
		else
			fputs("\"sampled\": null, ", f);
		fputs("\"processes\": [", f);
		int firstp = 1;
		for (size_t i = 0; i < snap->nprocs; i++) {
			const struct mt_process *p = snap->procs[i];
			fprintf(f, "%s{\"pid\": %u, \"exe\": ", firstp ? "" : ", ", p->pid);
			mt_json_str(f, p->exe);
			fputs(", \"sites\": [", f);
			firstp = 0;
			int firsts = 1;
			for (size_t r = 0; r < shown; r++) {
				if (rows[r].p != p)
					continue;
				double rate = rows[r].rate;
				fprintf(f,
					"%s{\"outstanding_bytes\": %llu, \"outstanding_allocations\": %llu, "
					"\"allocations_per_s\": %.1f, \"frames\": ",
					firsts ? "" : ", ", (unsigned long long)rows[r].bytes,
					(unsigned long long)rows[r].count, rate);
				firsts = 0;
				int k = mt_site_frames(p, mt_top_symbolizer(t, p), rows[r].site, fr,
						       MT_SYM_MAX_FRAMES);
				mt_json_frames(f, fr, k);
				fputc('}', f);
			}
			fputs("]}", f);
		}
		fputs("]}\n", f);
	} else {
		fprintf(f, "\nmemtrace: %.1f s, %zu process%s, %s%s outstanding%s\n", time_s,
			snap->nprocs, snap->nprocs == 1 ? "" : "es", sampled ? "~" : "",
			mt_fmt_bytes(total, a),
			sampled ? " (sampled: every figure is an estimate)" : "");
		fprintf(f, "%12s %10s %10s %8s  %-16s %s\n", "OUTSTANDING", "BLOCKS", "ALLOC/S",
			"PID", "PROCESS", "CALL SITE");
		for (size_t r = 0; r < shown; r++) {
			const struct mt_process *p = rows[r].p;
			double rate = rows[r].rate;
			/* by the name it was run under (redis-server, a link to
			 * redis-check-rdb), as ps and top name it */
			char safe[17];
			mt_text_safe(safe, sizeof safe, mt_process_name(p));
			fprintf(f, "%12s %10s %10s %8u  %-16.16s ", mt_fmt_bytes(rows[r].bytes, a),
				mt_fmt_count(rows[r].count, b),
				mt_fmt_count((uint64_t)(rate + 0.5), c), p->pid, safe);
			int k = mt_site_frames(p, mt_top_symbolizer(t, p), rows[r].site, fr,
					       MT_SYM_MAX_FRAMES);
			for (int j = 0; j < k && j < 4; j++) {
				char name[512];
				fputs(j ? " < " : "", f);
				mt_text_str(f, mt_frame_label(&fr[j], name, sizeof name));
			}
			fputc('\n', f);
		}
	}
	fflush(f);
	free(rows);
}

/* ---- the live screen ---- */

/* The ANSI (ECMA-48) sequences every terminal of today reads. */
#define HOME "\033[H"
#define CLEAR_LINE "\033[K"
#define CLEAR_BELOW "\033[J"
#define REVERSE "\033[7m"
#define PLAIN "\033[m"

/* A row's frames as the screen names them: escaped, folded. */
struct labels {
	char **v;
	int n;
};

static void labels_of(struct mt_top *t, const struct row *r, struct mt_frame *fr, struct labels *l)
{
	l->n = mt_site_frames(r->p, mt_top_symbolizer(t, r->p), r->site, fr, MT_SYM_MAX_FRAMES);
	l->v = xcalloc((size_t)l->n + 1, sizeof *l->v);
	for (int j = 0; j < l->n; j++) {
		char name[2048], safe[2048];
		mt_text_safe(safe, sizeof safe, mt_fit_label(&fr[j], NULL, name, sizeof name));
		l->v[j] = xstrdup(safe);
	}
}

/* How many first frames A and B share. */
static int shared(const struct labels *a, const struct labels *b)
{
	int k = 0;
	while (k < a->n && k < b->n && !strcmp(a->v[k], b->v[k]))
		k++;
	return k;
}

/* The line in LINE[0..LEN) written to F cut at WIDTH columns, the rest of
 * the screen's line erased. */
static void put_line(FILE *f, const char *line, size_t len, int width)
{
	fwrite(line, 1, mt_fit_prefix(line, len, (size_t)width), f);
	fputs(CLEAR_LINE "\n", f);
}

/* A row's call site: its first frame, then from the first frame no other
 * row shares (after "(+K)", the K frames between), then its callers up to
 * main (what lies beyond is the C library's start-up). */
static void call_site(FILE *f, const struct labels *l, int from)
{
	for (int j = 0; j < l->n; j++) {
		if (j && j < from)
			continue;
		if (j == from && from > 1)
			fprintf(f, " < (+%d)", from - 1);
		fprintf(f, "%s%s", j ? " < " : "", l->v[j]);
		if (!strcmp(l->v[j], "main"))
			break;
	}
}

static const char *const sort_names[] = { "outstanding bytes", "outstanding blocks",
					  "allocation rate" };

void mt_top_draw(struct mt_top *t, FILE *f, struct mt_recording *snap, double time_s,
		 const struct mt_top_screen *s)
{
	size_t nrows;
	uint64_t total, blocks = 0;
	double rate = 0;
	struct row *rows = collect(t, snap, time_s, !s->redraw, &nrows, &total);
	for (size_t r = 0; r < nrows; r++)
		blocks += rows[r].count, rate += rows[r].rate;
	/* the header takes 4 lines; the last line is left empty, so that the
	 * terminal never scrolls */
	size_t room = s->height > 6 ? (size_t)s->height - 5 : 1;
	size_t shown = nrows < room ? nrows : room;
	if (s->n > 0 && (size_t)s->n < shown)
		shown = (size_t)s->n;
	int one = snap->nprocs == 1;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		mt_oom(0);
	char a[32], b[32], c[32];

	fputs(HOME, f);
	fprintf(m, "memtrace top - %.1f s, ", time_s);
	if (one) {
		const struct mt_process *p = snap->procs[0];
		fprintf(m, "pid %u (", p->pid);
		mt_text_str(m, mt_process_name(p));
		fputs(")", m);
	} else {
		fprintf(m, "%zu processes", snap->nprocs);
	}
	fprintf(m, ": %s outstanding in %s blocks, %s alloc/s", mt_fmt_bytes(total, a),
		mt_fmt_count(blocks, b), mt_fmt_count((uint64_t)(rate + 0.5), c));
	fflush(m);
	put_line(f, buf, len, s->width);
	rewind(m);
	fprintf(m, "sorted by %s; keys: o outstanding, b blocks, r rate, q quit",
		sort_names[t->sort]);
	fflush(m);
	put_line(f, buf, (size_t)ftell(m), s->width);
	put_line(f, "", 0, s->width);
	rewind(m);
	fprintf(m, "%11s%c %8s%c %8s%c ", "OUTSTANDING", t->sort == MT_TOP_OUTSTANDING ? '*' : ' ',
		"BLOCKS", t->sort == MT_TOP_BLOCKS ? '*' : ' ', "ALLOC/S",
		t->sort == MT_TOP_RATE ? '*' : ' ');
	if (!one)
		fprintf(m, "%7s %-12s ", "PID", "PROCESS");
	fputs("CALL SITE", m);
	fflush(m);
	fputs(REVERSE, f);
	fwrite(buf, 1, mt_fit_prefix(buf, (size_t)ftell(m), (size_t)s->width), f);
	fputs(CLEAR_LINE PLAIN "\n", f);

	struct mt_frame *fr = xmalloc(MT_SYM_MAX_FRAMES * sizeof *fr);
	struct labels *l = xcalloc(shown + 1, sizeof *l);
	for (size_t r = 0; r < shown; r++)
		labels_of(t, &rows[r], fr, &l[r]);
	for (size_t r = 0; r < shown; r++) {
		const struct mt_process *p = rows[r].p;
		int from = 0;
		for (size_t o = 0; o < shown; o++)
			if (o != r && shared(&l[r], &l[o]) > from)
				from = shared(&l[r], &l[o]);
		rewind(m);
		fprintf(m, "%11s  %8s  %8s  ", mt_fmt_bytes(rows[r].bytes, a),
			mt_fmt_count(rows[r].count, b),
			mt_fmt_count((uint64_t)(rows[r].rate + 0.5), c));
		if (!one) {
			char safe[13];
			mt_text_safe(safe, sizeof safe, mt_process_name(p));
			fprintf(m, "%7u %-12s ", p->pid, safe);
		}
		call_site(m, &l[r], from < l[r].n ? from : 0);
		fflush(m);
		put_line(f, buf, (size_t)ftell(m), s->width);
	}
	fputs(CLEAR_BELOW, f);
	fflush(f);
	for (size_t r = 0; r < shown; r++) {
		for (int j = 0; j < l[r].n; j++)
			free(l[r].v[j]);
		free(l[r].v);
	}
	free(l);
	free(fr);
	fclose(m);
	free(buf);
	free(rows);
}

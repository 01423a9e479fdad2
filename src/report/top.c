/*
 * top.c - see top.h.
 *
 * Symbolizers are kept per process between tables: building one opens every
 * object's debug information, which is worth doing once, not every second.
 */
#include "top.h"
#include "base/hash.h"
#include "base/ptrmap.h"
#include "report.h"
#include "base/util.h"
#include "base/json.h"

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
	struct mt_ptrmap prev; /* (pid, stack) key -> allocations at the last table */
	double prev_time;
};

struct mt_top *mt_top_new(void)
{
	struct mt_top *t = xcalloc(1, sizeof *t);
	mt_ptrmap_xinit(&t->prev, 1u << 12);
	t->prev_time = -1;
	return t;
}

void mt_top_free(struct mt_top *t)
{
	for (size_t i = 0; i < t->nsyms; i++)
		mt_sym_free(t->syms[i].sym);
	free(t->syms);
	mt_ptrmap_destroy(&t->prev);
	free(t);
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

void mt_top_print(struct mt_top *t, FILE *f, struct mt_recording *snap, double time_s, long n,
		  int json)
{
	size_t nrows = 0, cap = 0;
	struct row *rows = NULL;
	uint64_t total = 0;
	for (size_t i = 0; i < snap->nprocs; i++) {
		const struct mt_process *p = snap->procs[i];
		for (uint32_t s = 0; s < p->figures.nsites; s++) {
			const struct mt_site_stats *st = &p->figures.sites[s];
			mt_grow(&rows, &cap, nrows, sizeof *rows);
			rows[nrows++] = (struct row){
				p, s, st->live_bytes, st->live_count, st->allocations, row_key(p, s)
			};
			total += st->live_bytes;
		}
	}
	if (nrows)
		qsort(rows, nrows, sizeof *rows, by_bytes);
	double dt = t->prev_time >= 0 ? time_s - t->prev_time : time_s;
	/* rates of every row, shown or not, so that a site entering the top N
	 * has its rate over the last interval, not since it was last shown */
	for (size_t r = 0; r < nrows; r++)
		rows[r].rate = rate_of(t, &rows[r], dt);
	size_t shown = n > 0 && (size_t)n < nrows ? (size_t)n : nrows;
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	char a[32], b[32], c[32];
	if (json) {
		fprintf(f, "{\"time_s\": %.3f, \"processes\": [", time_s);
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
		fprintf(f, "\nmemtrace: %.1f s, %zu process%s, %s outstanding\n", time_s,
			snap->nprocs, snap->nprocs == 1 ? "" : "es", mt_fmt_bytes(total, a));
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
	t->prev_time = time_s;
}

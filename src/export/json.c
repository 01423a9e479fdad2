/*
 * json.c - memtrace's own JSON export ("memtrace_export": 1), for
 * scripts: per process its totals, its call sites with their frames (the
 * frame objects of `memtrace report --json`), and
 *   - by default, every matched allocation: site, size, address, thread,
 *     when it was allocated and freed (null: never), in seconds since the
 *     process started, and for one never freed whether the C or C++
 *     runtime held it (analyse/runtime_held.c: then it is no leak).  An allocation is written when its free is seen, the
 *     leaked ones at the end (in allocation order), so the array is ordered
 *     by free time and memory holds only the live blocks;
 *   - with --per-site, the figures of each call site instead.
 *
 * The events come from one replay of the recording.  Its processes' events
 * interleave, while each process's allocations form one array: the first
 * process of a batch streams to the output, the others of the batch to
 * temporary files copied after it.  Allocations culled by record's
 * --cull-temporary exist only in the figures (culled_allocations).
 */
#include "export.h"
#include "analyse/blockrecs.h"
#include "base/util.h"
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

#define BATCH 32 /* processes per replay: each but the first holds a temporary file */

struct jproc {
	const struct mt_process *p;
	FILE *f;
	struct mt_blockrecs live;
	uint64_t seq, written;
};

struct jctx {
	struct jproc **by_index; /* process index -> its state, NULL outside the batch */
};

/* ---- the per-process header: identity, totals, sites ---- */

/* The process up to its sites; with FIGURES each site carries its figures. */
static void process_head(FILE *f, const struct mt_process *p, int first, int figures)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	fprintf(f, "%s    {\n      \"pid\": %u, \"ppid\": %u, \"exe\": ", first ? "" : ",\n",
		p->pid, p->ppid);
	mt_json_str(f, p->exe);
	fprintf(f, ", \"duration_s\": %.6f,\n", mt_process_duration(p));
	fputs("      \"totals\": ", f);
	mt_json_totals(f, p);
	fputs(",\n      \"sites\": [", f);
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	struct mt_frame_json *texts = mt_frame_json_new();
	int n = 0;
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		if (!p->figures.sites[s].allocations)
			continue; /* none of its allocations matched */
		fprintf(f, "%s\n        {\"id\": %u", n++ ? "," : "", s);
		if (figures) {
			fputs(", ", f);
			mt_json_site_figures(f, &p->figures.sites[s]);
		}
		fputs(",\n         \"frames\": ", f);
		int k = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		mt_json_frames_cached(f, fr, k, texts);
		fputc('}', f);
	}
	mt_frame_json_free(texts);
	mt_sym_free(sym);
	fputs(n ? "\n      ]" : "]", f);
}

/* ---- allocations ---- */

static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

/* TS as seconds since PROC started, to the nanosecond (from integers:
 * exact, and far cheaper than a double's %f on millions of lines). */
static char *put_secs_buf(char *p, const struct mt_process *proc, uint64_t ts)
{
	uint64_t ns = ts > proc->start_ts ? ts - proc->start_ts : 0, frac = ns % 1000000000u;
	p = mt_put_u64(p, ns / 1000000000u);
	*p++ = '.';
	for (uint64_t d = 100000000u; d; d /= 10)
		*p++ = (char)('0' + frac / d % 10);
	return p;
}

/* Block B, freed at FREED_TS when FREED, else leaked. */
static void write_block(struct jproc *jp, const struct mt_block *b, int freed, uint64_t freed_ts)
{
	char line[256], *p = line;
	p = put_str(p, jp->written++ ? ",\n        {\"site\": " : "\n        {\"site\": ");
	p = mt_put_u64(p, b->site);
	p = put_str(p, ", \"size\": ");
	p = mt_put_u64(p, b->size);
	p = put_str(p, ", \"address\": ");
	/* the recorder's compact records name a block by its allocation's
	 * serial number (MT_SERIAL_KEY), not by its address */
	if (b->ptr & MT_SERIAL_KEY(0)) {
		p = put_str(p, "null");
	} else {
		static const char hex[] = "0123456789abcdef";
		int shift = 60;
		while (shift > 0 && !(b->ptr >> shift))
			shift -= 4;
		p = put_str(p, "\"0x");
		for (; shift >= 0; shift -= 4)
			*p++ = hex[(b->ptr >> shift) & 15];
		*p++ = '"';
	}
	p = put_str(p, ", \"thread\": ");
	p = mt_put_u64(p, b->tid);
	p = put_str(p, ", \"allocated_s\": ");
	p = put_secs_buf(p, jp->p, b->ts);
	p = put_str(p, ", \"freed_s\": ");
	if (freed)
		p = put_secs_buf(p, jp->p, freed_ts);
	else /* the figures counted the runtime's blocks apart */
		p = put_str(p, mt_figures_is_live(&jp->p->figures, b->ptr) ?
				       "null, \"runtime_held\": false" :
				       "null, \"runtime_held\": true");
	*p++ = '}';
	fwrite(line, 1, (size_t)(p - line), jp->f);
}

/* Writes the block at PTR as freed at TS, if it is live. */
static void end_block(struct jproc *jp, uint64_t ptr, uint64_t ts)
{
	struct mt_block b;
	/* none: a block allocated before the recording began, or not matched */
	if (mt_blockrecs_take(&jp->live, ptr, &b))
		write_block(jp, &b, 1, ts);
}

static void on_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr, uint64_t size,
		     uint32_t site)
{
	struct jctx *c = ctx;
	struct jproc *jp = c->by_index[proc];
	if (!jp)
		return;
	/* allocated again without a free seen: the figures count the old
	 * block freed here, and so does the export */
	end_block(jp, ptr, ts);
	mt_blockrecs_put(&jp->live, &(struct mt_block){ .ptr = ptr,
							.ts = ts,
							.size = size,
							.seq = jp->seq++,
							.site = site,
							.tid = tid });
}

static void on_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	(void)tid;
	struct jctx *c = ctx;
	struct jproc *jp = c->by_index[proc];
	if (jp)
		end_block(jp, ptr, ts);
}

static int by_seq(const void *a, const void *b)
{
	const struct mt_block *x = *(const struct mt_block *const *)a,
			      *y = *(const struct mt_block *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The blocks still live at the end: leaked, in allocation order. */
static void write_leaked(struct jproc *jp)
{
	const struct mt_block **v = xmalloc((jp->live.live + 1) * sizeof *v);
	size_t n = 0, pos = 0;
	for (const struct mt_block *b; (b = mt_blockrecs_next(&jp->live, &pos));)
		v[n++] = b;
	if (n)
		qsort(v, n, sizeof *v, by_seq);
	for (size_t i = 0; i < n; i++)
		write_block(jp, v[i], 0, 0);
	free(v);
}

static int copy_back(FILE *from, FILE *to)
{
	char buf[1 << 16];
	size_t n;
	if (fflush(from) != 0 || fseek(from, 0, SEEK_SET) != 0)
		return -1;
	while ((n = fread(buf, 1, sizeof buf, from)) > 0)
		fwrite(buf, 1, n, to);
	return ferror(from) ? -1 : 0;
}

static void jproc_free(struct jproc *jp)
{
	mt_blockrecs_destroy(&jp->live);
}

/* One replay for the wanted processes IDX[0..N): the first streams to OUT. */
static int batch(struct mt_export_ctx *x, struct jctx *c, const size_t *idx, size_t n, int first,
		 char *err, size_t errlen)
{
	const struct mt_recording *rec = &x->sel->matched;
	struct jproc jps[BATCH];
	int r = 0;
	memset(jps, 0, sizeof jps);
	for (size_t k = 0; k < n && r == 0; k++) {
		jps[k].p = rec->procs[idx[k]];
		jps[k].f = k ? tmpfile() : x->out;
		if (!jps[k].f) {
			snprintf(err, errlen, "cannot create a temporary file for process %u",
				 jps[k].p->pid);
			r = -1;
		} else {
			mt_blockrecs_init(&jps[k].live);
		}
		c->by_index[idx[k]] = &jps[k];
	}
	if (r == 0) {
		process_head(x->out, jps[0].p, first, 0);
		fputs(",\n      \"allocations\": [", x->out);
		struct mt_replay_ops ops = { on_alloc, on_free, c };
		r = mt_select_replay(x->sel, &ops, err, errlen);
	}
	for (size_t k = 0; k < n; k++) {
		if (r == 0) {
			if (k) {
				process_head(x->out, jps[k].p, 0, 0);
				fputs(",\n      \"allocations\": [", x->out);
				if (copy_back(jps[k].f, x->out) < 0) {
					snprintf(err, errlen, "cannot read back a temporary file");
					r = -1;
				}
				fclose(jps[k].f);
				jps[k].f = x->out; /* the leaked ones follow */
			}
			write_leaked(&jps[k]);
			fputs(jps[k].written ? "\n      ]\n    }" : "]\n    }", x->out);
		}
		if (k && jps[k].f && jps[k].f != x->out)
			fclose(jps[k].f);
		jproc_free(&jps[k]);
		c->by_index[idx[k]] = NULL;
	}
	return r;
}

static int allocations(struct mt_export_ctx *x, char *err, size_t errlen)
{
	const struct mt_recording *rec = &x->sel->matched;
	struct jctx c = { xcalloc(rec->nprocs + 1, sizeof *c.by_index) };
	size_t idx[BATCH], n = 0;
	int first = 1, r = 0;
	for (size_t i = 0; i <= rec->nprocs && r == 0; i++) {
		if (i < rec->nprocs && mt_export_wants(x, rec->procs[i]))
			idx[n++] = i;
		if (n && (n == BATCH || i == rec->nprocs)) {
			r = batch(x, &c, idx, n, first, err, errlen);
			first = 0;
			n = 0;
		}
	}
	free(c.by_index);
	return r;
}

int mt_export_json(struct mt_export_ctx *x, char *err, size_t errlen)
{
	const struct mt_recording *rec = &x->sel->matched;
	fputs("{\n  \"memtrace_export\": 1,\n  \"recording\": ", x->out);
	mt_json_str(x->out, x->sel->path);
	fprintf(x->out, ",\n  \"filtered\": %s,\n  \"per_site\": %s,\n  \"processes\": [\n",
		x->sel->filtered ? "true" : "false", x->per_site ? "true" : "false");
	int r = 0;
	if (x->per_site) {
		int first = 1;
		for (size_t i = 0; i < rec->nprocs; i++) {
			if (!mt_export_wants(x, rec->procs[i]))
				continue;
			process_head(x->out, rec->procs[i], first, 1);
			fputs("\n    }", x->out);
			first = 0;
		}
	} else {
		r = allocations(x, err, errlen);
	}
	fputs("\n  ]\n}\n", x->out);
	return r;
}

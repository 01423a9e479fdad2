/*
 * json.c - `memtrace report --json`: the schema of man/memtrace-report.1
 * ("memtrace_report": 1).  Keys are only ever added, never renamed.
 */
#include "report.h"
#include "analyse/functions.h"
#include "analyse/resident.h"
#include "analyse/mapped.h"
#include "base/util.h"
#include "base/json.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void json_str(FILE *f, const char *s, int html)
{
	if (html)
		mt_json_str_html(f, s);
	else
		mt_json_str(f, s);
}

void mt_json_argv(FILE *f, const struct mt_process *p, int html)
{
	fputc('[', f);
	for (int i = 0; i < p->argc; i++) {
		if (i)
			fputs(", ", f);
		json_str(f, p->argv[i], html);
	}
	fputc(']', f);
}

void mt_json_identity(FILE *f, const struct mt_process *p, const char *sep, int html)
{
	fprintf(f, "\"pid\": %u, \"ppid\": %u%s\"name\": ", p->pid, p->ppid, sep);
	json_str(f, mt_process_name(p), html);
	fprintf(f, "%s\"exe\": ", sep);
	json_str(f, p->exe, html);
	fprintf(f, "%s\"argv\": ", sep);
	mt_json_argv(f, p, html);
	fprintf(f, "%s\"backend\": ", sep);
	json_str(f, p->backend, html);
	fprintf(f, "%s\"allocator\": ", sep);
	json_str(f, p->heap, html);
	fprintf(f, "%s\"allocator_object\": ", sep);
	json_str(f, p->heap_object, html);
}

/* A figure by its name in the schema, where it is in its struct (a
 * uint64_t), whether a line break goes before it, and whether a diff keeps
 * it (sizes, times and what only a run's end holds are left out). */
struct figure {
	const char *key;
	size_t off;
	unsigned brk : 1, in_diff : 1;
};

/* where a line breaks in a report's totals and sites */
#define TOTALS_BRK ",\n        "
#define SITE_BRK ",\n         "

/* (a report's "peak_time_s" comes after the first PEAK_TIME_AFTER) */
static const struct figure total_keys[] = {
	{ "allocations", offsetof(struct mt_totals, allocations), 0, 1 },
	{ "frees", offsetof(struct mt_totals, frees), 0, 1 },
	{ "allocated_bytes", offsetof(struct mt_totals, allocated_bytes), 0, 1 },
	{ "peak_bytes", offsetof(struct mt_totals, peak_bytes), 1, 1 },
	{ "peak_allocations", offsetof(struct mt_totals, peak_count), 0, 1 },
	{ "leaked_allocations", offsetof(struct mt_totals, live_count), 1, 1 },
	{ "leaked_bytes", offsetof(struct mt_totals, live_bytes), 0, 1 },
	{ "runtime_held_allocations", offsetof(struct mt_totals, held_count), 1, 0 },
	{ "runtime_held_bytes", offsetof(struct mt_totals, held_bytes), 0, 0 },
	{ "temporary_allocations", offsetof(struct mt_totals, temporary), 1, 1 },
	{ "unmatched_frees", offsetof(struct mt_totals, unmatched_frees), 0, 1 },
	{ "culled_allocations", offsetof(struct mt_totals, culled), 1, 1 },
	{ "suppressed_allocations", offsetof(struct mt_totals, suppressed_count), 1, 0 },
	{ "suppressed_bytes", offsetof(struct mt_totals, suppressed_bytes), 0, 0 },
};
#define PEAK_TIME_AFTER 5
#define NTOTALS (sizeof total_keys / sizeof *total_keys)

static const struct figure site_keys[] = {
	{ "allocations", offsetof(struct mt_site_stats, allocations), 0, 1 },
	{ "allocated_bytes", offsetof(struct mt_site_stats, allocated_bytes), 0, 1 },
	{ "frees", offsetof(struct mt_site_stats, frees), 0, 1 },
	{ "leaked_allocations", offsetof(struct mt_site_stats, live_count), 1, 1 },
	{ "leaked_bytes", offsetof(struct mt_site_stats, live_bytes), 0, 1 },
	{ "runtime_held_allocations", offsetof(struct mt_site_stats, held_count), 1, 0 },
	{ "runtime_held_bytes", offsetof(struct mt_site_stats, held_bytes), 0, 0 },
	{ "peak_bytes", offsetof(struct mt_site_stats, peak_bytes), 1, 1 },
	{ "peak_allocations", offsetof(struct mt_site_stats, peak_count), 0, 1 },
	{ "temporary_allocations", offsetof(struct mt_site_stats, temporary), 0, 1 },
	{ "culled_allocations", offsetof(struct mt_site_stats, culled), 1, 1 },
	{ "min_size", offsetof(struct mt_site_stats, min_size), 0, 0 },
	{ "max_size", offsetof(struct mt_site_stats, max_size), 0, 0 },
};
#define NSITE (sizeof site_keys / sizeof *site_keys)

static uint64_t value(const void *s, const struct figure *k)
{
	uint64_t v;
	memcpy(&v, (const char *)s + k->off, sizeof v);
	return v;
}

/* The figures KEYS[FROM..TO) of S as "key": value pairs, a comma before
 * each but the table's first, BRK where a line break goes (NULL: none);
 * with DIFF only the ones a diff keeps, and with BASE each as S's minus
 * BASE's, signed. */
static void put_figures(FILE *f, const struct figure *keys, size_t from, size_t to, const void *s,
			const void *base, int diff, const char *brk)
{
	/* made in BUF and written at once: a report writes a dozen figures
	 * for each of 65,536 sites, a printf each */
	char buf[1024], *p = buf;
	for (size_t i = from; i < to; i++) {
		const struct figure *k = &keys[i];
		if (diff && !k->in_diff)
			continue;
		/* (a key, its separator and a figure take less than 128) */
		if (p - buf > (ptrdiff_t)sizeof buf - 128) {
			fwrite(buf, 1, (size_t)(p - buf), f);
			p = buf;
		}
		const char *sep = !i ? "" : k->brk && brk ? brk : ", ";
		size_t n = strlen(sep), kn = strlen(k->key);
		memcpy(p, sep, n);
		p += n;
		*p++ = '"';
		memcpy(p, k->key, kn);
		p += kn;
		memcpy(p, "\": ", 3);
		p += 3;
		if (base) { /* saturated: a hostile file's figures reach 2^64 - 1 */
			int64_t d = mt_sat_sub(value(s, k), value(base, k));
			if (d < 0)
				*p++ = '-';
			p = mt_put_u64(p, d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d);
		} else {
			p = mt_put_u64(p, value(s, k));
		}
	}
	fwrite(buf, 1, (size_t)(p - buf), f);
}

void mt_json_totals(FILE *f, const struct mt_process *p)
{
	const struct mt_totals *t = &p->figures.t;
	fputc('{', f);
	put_figures(f, total_keys, 0, PEAK_TIME_AFTER, t, NULL, 0, TOTALS_BRK);
	fprintf(f, ", \"peak_time_s\": %.6f",
		t->peak_ts > p->start_ts ? (double)(t->peak_ts - p->start_ts) / 1e9 : 0.0);
	put_figures(f, total_keys, PEAK_TIME_AFTER, NTOTALS, t, NULL, 0, TOTALS_BRK);
	fputc('}', f);
}

void mt_json_totals_delta(FILE *f, const struct mt_totals *base, const struct mt_totals *new)
{
	put_figures(f, total_keys, 0, NTOTALS, new, base, 1, TOTALS_BRK);
}

void mt_json_totals_side(FILE *f, const struct mt_totals *t)
{
	put_figures(f, total_keys, 0, NTOTALS, t, NULL, 1, NULL);
}

void mt_json_site_figures(FILE *f, const struct mt_site_stats *s)
{
	put_figures(f, site_keys, 0, NSITE, s, NULL, 0, SITE_BRK);
}

void mt_json_site_delta(FILE *f, const struct mt_site_stats *base, const struct mt_site_stats *new)
{
	put_figures(f, site_keys, 0, NSITE, new, base, 1, SITE_BRK);
}

void mt_json_lost(FILE *f, const struct mt_process *p)
{
	fprintf(f, "\"lost_events\": %llu, \"lost_by_kind\": {",
		(unsigned long long)mt_process_lost(p));
	for (int k = 0; k < MT_LOST_KIND_COUNT; k++)
		fprintf(f, "%s\"%s\": %llu", k ? ", " : "", mt_lost_names[k],
			(unsigned long long)p->lost[k]);
	fputc('}', f);
}

/* The kinds of leaked blocks K, when a leak scan ran: ", "-led pairs,
 * BRK before each kind's pair. */
static void kind_figures(FILE *f, const struct mt_kind_figures *k, const char *brk)
{
	for (int i = 0; i < MT_LEAK_KINDS; i++)
		fprintf(f, ",%s\"%s_allocations\": %llu, \"%s_bytes\": %llu", i % 2 ? " " : brk,
			mt_leak_kind_names[i], (unsigned long long)k->count[i],
			mt_leak_kind_names[i], (unsigned long long)k->bytes[i]);
}

void mt_json_site_kinds(FILE *f, const struct mt_process *p, uint32_t site)
{
	if (p->kinds.sites && site < p->kinds.nsites)
		kind_figures(f, &p->kinds.sites[site], "\n         ");
}

void mt_json_leak_kinds(FILE *f, const struct mt_process *p)
{
	const struct mt_leak_kinds *k = &p->kinds;
	if (!k->ran) {
		fputs("\"leak_kinds\": null", f);
		return;
	}
	fprintf(f, "\"leak_kinds\": {\"complete\": %s, \"why\": ",
		k->scan.complete ? "true" : "false");
	if (k->why)
		mt_json_str(f, k->why);
	else
		fputs("null", f);
	fprintf(f, ", \"pause_ms\": %.3f, \"scanned_bytes\": %llu, \"root_bytes\": %llu",
		k->scan.ns / 1e6, (unsigned long long)k->scan.scanned,
		(unsigned long long)k->scan.roots);
	kind_figures(f, &k->total, "\n        ");
	fputc('}', f);
}

void mt_json_threads(FILE *f, const struct mt_process *p)
{
	size_t n;
	struct mt_thread_last *t = mt_figures_threads(&p->figures, &n);
	fputc('[', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s{\"tid\": %u, \"allocations\": %llu, \"allocated_bytes\": %llu}",
			i ? ", " : "", t[i].tid, (unsigned long long)t[i].allocations,
			(unsigned long long)t[i].allocated_bytes);
	fputc(']', f);
	free(t);
}

void mt_json_markers(FILE *f, const struct mt_process *p)
{
	fputc('[', f);
	for (size_t i = 0; i < p->nmarkers; i++) {
		fprintf(f, "%s{\"time_s\": %.6f, \"value\": %llu, \"text\": ", i ? ", " : "",
			p->markers[i].ts > p->start_ts ?
				(double)(p->markers[i].ts - p->start_ts) / 1e9 :
				0.0,
			(unsigned long long)p->markers[i].value);
		mt_json_str(f, p->markers[i].text);
		fputc('}', f);
	}
	fputc(']', f);
}

static double rel_s(const struct mt_process *p, uint64_t ts)
{
	return ts > p->start_ts ? (double)(ts - p->start_ts) / 1e9 : 0.0;
}

/* The mapping calls' figures (analyse/mapped.h), as keys after others. */
static void json_mapped(FILE *f, const struct mt_process *p, const struct mt_mapped *m)
{
	fprintf(f,
		",\n        \"mapped_bytes\": %llu, \"mapped_mmap_bytes\": %llu,"
		" \"mapped_brk_bytes\": %llu, \"mapped_block_bytes\": %llu,"
		" \"peak_mapped_bytes\": %llu, \"peak_mapped_s\": %.6f, \"mmap_bytes_total\": %llu,"
		"\n        \"mapping_calls\": {\"total\": %zu",
		(unsigned long long)m->end_bytes, (unsigned long long)m->end_mmap,
		(unsigned long long)m->end_brk, (unsigned long long)m->end_blocks,
		(unsigned long long)m->peak_bytes, rel_s(p, m->peak_ts),
		(unsigned long long)m->mmap_bytes, m->calls);
	for (int k = 0; k < MT_MAP_KIND_COUNT; k++)
		fprintf(f, ", \"%s\": %zu", mt_map_kind_names[k], m->kind[k]);
	fprintf(f, ", \"failed\": %zu, \"by_allocator\": %zu}", m->failed, m->by_allocator);
}

void mt_json_memory(FILE *f, const struct mt_process *p)
{
	struct mt_resident r;
	struct mt_mapped m;
	mt_resident_of(p, &r);
	mt_mapped_of(p, &m);
	if (!r.samples && !p->nmaps) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"samples\": %zu", r.samples);
	if (r.samples)
		fprintf(f,
			", \"peak_rss_bytes\": %llu, \"peak_rss_s\": %.6f,"
			" \"heap_at_peak_rss_bytes\": %llu,\n        \"end_s\": %.6f, \"rss_bytes\": %llu,"
			" \"rss_anon_bytes\": %llu, \"rss_file_bytes\": %llu, \"rss_shmem_bytes\": %llu,"
			" \"heap_bytes\": %llu, \"anon_beyond_heap_bytes\": %llu,\n        "
			"\"max_anon_beyond_heap_bytes\": %llu, \"max_anon_beyond_heap_s\": %.6f,"
			" \"vm_data_peak_bytes\": %llu,\n        \"peak_rss_anon_bytes\": %llu,"
			" \"peak_rss_file_bytes\": %llu, \"peak_rss_shmem_bytes\": %llu,"
			" \"memtrace_ring_peak_bytes\": %llu",
			(unsigned long long)r.peak_rss, rel_s(p, r.peak_ts),
			(unsigned long long)r.peak_heap, rel_s(p, r.end_ts),
			(unsigned long long)r.end_rss, (unsigned long long)r.end_anon,
			(unsigned long long)r.end_file, (unsigned long long)r.end_shmem,
			(unsigned long long)r.end_heap, (unsigned long long)r.end_beyond,
			(unsigned long long)r.beyond_bytes, rel_s(p, r.beyond_ts),
			(unsigned long long)r.vm_data_peak, (unsigned long long)r.peak_anon,
			(unsigned long long)r.peak_file, (unsigned long long)r.peak_shmem,
			(unsigned long long)r.ring_peak);
	if (p->nmaps)
		json_mapped(f, p, &m);
	fputc('}', f);
}

void mt_json_filter(FILE *f, const struct mt_filter *flt, int html)
{
	if (!flt || !flt->active || !flt->desc) {
		fputs("null", f);
		return;
	}
	fputc('{', f);
	for (const char *s = flt->desc; *s;) {
		size_t n = strcspn(s, "\n"), k = strcspn(s, "=");
		char *key = xstrndup(s, k), *val = xstrndup(s + k + 1, n - k - 1);
		if (s != flt->desc)
			fputs(", ", f);
		json_str(f, key, html);
		fputs(": ", f);
		json_str(f, val, html);
		free(key);
		free(val);
		s += n + (s[n] == '\n');
	}
	fputc('}', f);
}

void mt_json_span(FILE *f, const struct mt_filter *flt, const struct mt_process *p)
{
	double from;
	double span = mt_filter_span_s(flt && flt->active ? flt : NULL, p, &from);
	fprintf(f, "\"span_s\": %.6f, \"span_from_s\": %.6f", span, from);
}

/* The calls that tuned the allocator: the "mallopts" array. */
static void json_tunes(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym)
{
	fputc('[', f);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < p->ntunes; i++) {
		const struct mt_tune_call *t = &p->tunes[i];
		fprintf(f, "%s\n        {\"time_s\": %.6f, \"thread\": %u, \"function\": \"%s\", ",
			i ? "," : "", rel_s(p, t->ts), t->tid, mt_tune_function(t));
		fputs("\"param\": ", f);
		mt_json_str(f,
			    t->m.call == MT_TUNE_MALLOPT ? mt_tune_param_name(t->m.param) : NULL);
		fprintf(f, ", \"raw_param\": %lld, \"value\": %lld, \"result\": %lld,\n         ",
			(long long)t->m.param, (long long)t->m.value, (long long)t->m.result);
		int k = mt_stack_frames(sym, t->frames, t->nframes, fr, MT_SYM_MAX_FRAMES);
		char name[512];
		fputs("\"site\": ", f);
		mt_json_str(f, k ? mt_frame_label(&fr[mt_useful_frame(fr, k)], name, sizeof name) :
				   NULL);
		fputs(", \"frames\": ", f);
		mt_json_frames(f, fr, k);
		fputc('}', f);
	}
	fputs(p->ntunes ? "\n      ]" : "]", f);
}

static int process_json(FILE *f, const struct mt_process *p, const struct mt_process *main,
			const struct mt_report_opts *o, size_t idx)
{
	fputs("    {\n      ", f);
	mt_json_identity(f, p, ",\n      ", 0);
	fprintf(f, ",\n      \"duration_s\": %.6f,\n      ", mt_process_duration(p));
	mt_json_span(f, o->filter, p);
	fputs(",\n", f);
	if (p->exited)
		fprintf(f, "      \"exit_status\": %lld,\n", (long long)p->exit_status);
	if (mt_process_signal_name(p))
		fprintf(f, "      \"signal\": \"%s\",\n", mt_process_signal_name(p));
	if (p->exec_outcome) {
		fputs("      \"exec\": {\"path\": ", f);
		mt_json_str(f, p->exec_path);
		fprintf(f, ", \"traced\": %s, \"why\": ",
			p->exec_outcome == MT_EXEC_TRACED + 1 ? "true" : "false");
		if (p->exec_why)
			mt_json_str(f, p->exec_why);
		else
			fputs("null", f);
		fputs("},\n", f);
	}
	fprintf(f, "      \"untraced_children\": %llu,\n",
		(unsigned long long)p->untraced_children);
	/* a sampled recording: every figure is an estimate */
	if (p->figures.sample_mean)
		fprintf(f, "      \"sampled\": {\"mean_bytes\": %llu},\n",
			(unsigned long long)p->figures.sample_mean);
	else
		fputs("      \"sampled\": null,\n", f);
	fprintf(f, "      \"main\": %s,\n      \"image\": %u,\n", p == main ? "true" : "false",
		p->image);
	fputs("      \"totals\": ", f);
	mt_json_totals(f, p);
	fputs(",\n      ", f);
	mt_json_lost(f, p);
	fputs(",\n      ", f);
	mt_json_leak_kinds(f, p);
	/* which blocks "leaked" counts: --leaks=KINDS narrows it to those */
	fputs(",\n      \"leaked_kinds\": ", f);
	if (o->leak_kinds && p->kinds.ran) {
		fputc('[', f);
		for (int k = 0, n = 0; k < MT_LEAK_KINDS; k++)
			if (o->leak_kinds & MT_LEAK_MASK(k))
				fprintf(f, "%s\"%s\"", n++ ? ", " : "", mt_leak_kind_names[k]);
		fputc(']', f);
	} else {
		fputs("null", f);
	}
	fputs(",\n      \"memory\": ", f);
	mt_json_memory(f, p);
	fputs(",\n      \"threads\": ", f);
	mt_json_threads(f, p);
	fputs(",\n      \"sites\": [", f);

	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	struct mt_frame_json *texts = mt_frame_json_new();
	size_t n;
	/* every site, as the interface says, ranked by the view's measure */
	uint32_t *sites = mt_rank_sites(p, o->view, 0, &n);
	if (o->limit > 0 && (size_t)o->limit < n)
		n = (size_t)o->limit;
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < n; i++) {
		const struct mt_site_stats *s = &p->figures.sites[sites[i]];
		fprintf(f, "%s\n        {", i ? "," : "");
		mt_json_site_figures(f, s);
		mt_json_site_kinds(f, p, sites[i]);
		fprintf(f, ",\n         \"allocator\": \"%s\", \"allocator_object\": ",
			mt_fn_names[s->fn]);
		mt_json_str(f, p->site_object[sites[i]]);
		int k = mt_site_frames(p, sym, sites[i], fr, MT_SYM_MAX_FRAMES);
		fprintf(f,
			",\n         \"useful_frame\": %d, \"frames\": ", mt_useful_frame(fr, k));
		mt_json_frames_cached(f, fr, k, texts);
		fputc('}', f);
	}
	mt_frame_json_free(texts);
	free(sites);
	fputs(n ? "\n      ],\n" : "],\n", f);
	fputs("      \"markers\": ", f);
	mt_json_markers(f, p);
	fputs(",\n      \"mallopts\": ", f);
	json_tunes(f, p, sym);
	int found = mt_report_sections(f, p, sym, o, idx, 1);
	fputs(",\n", f);
	fputs("      \"warnings\": [", f);
	const char *const *w = mt_sym_warnings(sym);
	for (int i = 0; w && w[i]; i++) {
		if (i)
			fputs(", ", f);
		mt_json_str(f, w[i]);
	}
	fputs("]\n    }", f);
	mt_sym_free(sym);
	return found;
}

int mt_report_json(FILE *f, struct mt_recording *rec, const struct mt_report_opts *o)
{
	fprintf(f, "{\n  \"memtrace_report\": 1,\n  \"view\": \"%s\",\n  \"recording\": ",
		mt_view_names[o->view]);
	mt_json_str(f, rec->path);
	fputs(",\n  \"filter\": ", f);
	mt_json_filter(f, o->filter, 0);
	fprintf(f, ",\n  \"truncated\": %s,\n  \"processes\": [\n",
		rec->truncated ? "true" : "false");
	int shown = 0, found = 0;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (mt_report_wants(o, rec->procs[i])) {
			fputs(shown++ ? ",\n" : "", f);
			found |= process_json(f, rec->procs[i], mt_recording_main(rec), o, i);
		}
	fputs("\n  ]\n}\n", f);
	if (shown && !found) {
		mt_error("no function named '%s' on any stack (--functions lists them)",
			 o->callers ? o->callers : o->callees);
		return 1;
	}
	return 0;
}

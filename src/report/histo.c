/*
 * histo.c - `memtrace report --sizes`: a process's size and lifetime
 * histograms (analyse/histo.h) as text bars and as JSON keys.
 */
#include "report.h"
#include "base/util.h"

#include <string.h>

static void bar(FILE *f, uint64_t v, uint64_t max)
{
	int n = max ? (int)((v * 40 + max - 1) / max) : 0;
	fputs("  ", f);
	for (int i = 0; i < n; i++)
		fputc('#', f);
	fputc('\n', f);
}

static const char *life_label(int b, char *buf, size_t len)
{
	static const char *const names[] = { "1 ms", "10 ms", "100 ms", "1 s", "10 s" };
	if (b == 0)
		snprintf(buf, len, "under %s", names[0]);
	else if (b == MT_LIFE_BUCKETS - 1)
		snprintf(buf, len, "%s or more", names[b - 1]);
	else
		snprintf(buf, len, "%s to %s", names[b - 1], names[b]);
	return buf;
}

void mt_print_histo(FILE *f, const struct mt_histo *h)
{
	char a[32], b[32], c[40];
	int lo = MT_SIZE_BUCKETS, hi = -1;
	uint64_t max = 0, total = 0;
	for (int k = 0; k < MT_SIZE_BUCKETS; k++)
		if (h->size_count[k]) {
			lo = k < lo ? k : lo;
			hi = k;
			max = h->size_count[k] > max ? h->size_count[k] : max;
			total += h->size_count[k];
		}
	fprintf(f, "\nSIZES (%s allocation%s by requested size)\n", mt_fmt_count(total, a),
		total == 1 ? "" : "s");
	fprintf(f, "  %-16s %12s %12s\n", "size", "allocations", "bytes");
	for (int k = lo; k <= hi; k++) {
		uint64_t top = mt_size_bucket_max(k);
		if (top == UINT64_MAX)
			snprintf(c, sizeof c, "> %s B", mt_fmt_count(mt_size_bucket_max(k - 1), a));
		else
			snprintf(c, sizeof c, "<= %s B", mt_fmt_count(top, a));
		fprintf(f, "  %-16s %12s %12s", c, mt_fmt_count(h->size_count[k], a),
			mt_fmt_bytes(h->size_bytes[k], b));
		bar(f, h->size_count[k], max);
	}
	max = h->never_freed;
	total = h->never_freed;
	for (int k = 0; k < MT_LIFE_BUCKETS; k++) {
		max = h->life_count[k] > max ? h->life_count[k] : max;
		total += h->life_count[k];
	}
	fprintf(f, "\nLIFETIMES (%s allocation%s by the time from allocation to free)\n",
		mt_fmt_count(total, a), total == 1 ? "" : "s");
	fprintf(f, "  %-16s %12s %12s\n", "lifetime", "allocations", "bytes");
	for (int k = 0; k < MT_LIFE_BUCKETS; k++) {
		fprintf(f, "  %-16s %12s %12s", life_label(k, c, sizeof c),
			mt_fmt_count(h->life_count[k], a), mt_fmt_bytes(h->life_bytes[k], b));
		bar(f, h->life_count[k], max);
	}
	fprintf(f, "  %-16s %12s %12s", "never freed", mt_fmt_count(h->never_freed, a),
		mt_fmt_bytes(h->never_freed_bytes, b));
	bar(f, h->never_freed, max);
}

void mt_json_histo(FILE *f, const struct mt_histo *h)
{
	fputs(",\n      \"sizes\": [", f);
	int first = 1;
	for (int k = 0; k < MT_SIZE_BUCKETS; k++) {
		if (!h->size_count[k])
			continue;
		uint64_t top = mt_size_bucket_max(k);
		fprintf(f, "%s{\"min_size\": %llu, \"max_size\": ", first ? "" : ", ",
			(unsigned long long)(k ? mt_size_bucket_max(k - 1) + 1 : 0));
		if (top == UINT64_MAX)
			fputs("null", f);
		else
			fprintf(f, "%llu", (unsigned long long)top);
		fprintf(f, ", \"allocations\": %llu, \"bytes\": %llu}",
			(unsigned long long)h->size_count[k], (unsigned long long)h->size_bytes[k]);
		first = 0;
	}
	fputs("],\n      \"lifetimes\": [", f);
	for (int k = 0; k < MT_LIFE_BUCKETS; k++) {
		fprintf(f, "%s{\"min_s\": %g, \"max_s\": ", k ? ", " : "",
			k ? mt_life_bounds_s[k - 1] : 0.0);
		if (k < MT_LIFE_BUCKETS - 1)
			fprintf(f, "%g", mt_life_bounds_s[k]);
		else
			fputs("null", f);
		fprintf(f, ", \"allocations\": %llu, \"bytes\": %llu}",
			(unsigned long long)h->life_count[k], (unsigned long long)h->life_bytes[k]);
	}
	fprintf(f, "],\n      \"never_freed\": {\"allocations\": %llu, \"bytes\": %llu}",
		(unsigned long long)h->never_freed, (unsigned long long)h->never_freed_bytes);
}

int mt_report_sizes_text(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			 const struct mt_report_opts *o, size_t idx)
{
	(void)p;
	(void)sym;
	if (o->histo)
		mt_print_histo(f, &o->histo[idx]);
	return 1;
}

int mt_report_sizes_json(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			 const struct mt_report_opts *o, size_t idx)
{
	(void)p;
	(void)sym;
	if (o->histo)
		mt_json_histo(f, &o->histo[idx]);
	return 1;
}

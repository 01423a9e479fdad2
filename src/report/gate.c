/*
 * gate.c - record's leak gate (`memtrace record --fail-on-leak`): whether a
 * recording leaked more than a CI job allows, and the leak trees that say
 * where, as LeakSanitizer prints its report on stderr before exiting 23.
 */
#include "report.h"
#include "analyse/sites.h"
#include "base/json.h"
#include "base/util.h"

#include <stdlib.h>

int mt_leak_gate(FILE *f, struct mt_recording *rec, uint64_t max_bytes)
{
	uint64_t bytes = 0, count = 0, held = 0, scanned = 0;
	for (size_t i = 0; i < rec->nprocs; i++) {
		struct mt_process *p = rec->procs[i];
		/* where a leak scan ran, a leak is what nothing points at
		 * (LeakSanitizer's rule): the blocks still reachable, a
		 * cache, are not counted */
		if (p->kinds.ran) {
			uint64_t n, b;
			mt_kind_sum(&p->kinds.total,
				    MT_LEAK_MASK(MT_LEAK_POSSIBLE) |
					    MT_LEAK_MASK(MT_LEAK_REACHABLE),
				    &n, &b);
			held += b;
			scanned++;
			mt_leak_kinds_select(p, MT_LEAK_LOST);
		}
		bytes += p->figures.t.live_bytes;
		count += p->figures.t.live_count;
	}
	if (bytes <= max_bytes && !(max_bytes == 0 && count))
		return 0;
	char a[32], b[32], c[32];
	fprintf(f, "memtrace: leak gate: %s %s in %s allocation%s, more than the %s allowed\n",
		mt_fmt_bytes(bytes, a),
		scanned == rec->nprocs ? "definitely and indirectly lost" : "leaked",
		mt_fmt_count(count, b), mt_s(count), mt_fmt_bytes(max_bytes, c));
	if (scanned)
		fprintf(f,
			"memtrace: leak gate: the leak scan's rule: %s possibly lost or still "
			"reachable not counted\n",
			mt_fmt_bytes(held, a));
	for (size_t i = 0; i < rec->nprocs; i++) {
		const struct mt_process *p = rec->procs[i];
		if (!p->figures.t.live_count)
			continue;
		fprintf(f, "\nprocess %u: ", p->pid);
		mt_text_str(f, p->exe ? p->exe : "?");
		fputc('\n', f);
		size_t n;
		uint32_t *sites = mt_rank_sites(p, MT_VIEW_LEAKS, 1, &n);
		struct mt_symbolizer *sym = mt_process_symbolizer(p);
		mt_print_tree(f, p, sym, sites, n, MT_VIEW_LEAKS, 0.0, NULL);
		mt_sym_free(sym);
		free(sites);
	}
	return 1;
}

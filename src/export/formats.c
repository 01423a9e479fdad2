/*
 * formats.c - the table of export formats (export.h's mt_exporters): all
 * that `memtrace export --help`, the server's /data/<id>/export/ endpoints
 * and the GUI's download buttons say of each format, so that a new format
 * is one entry here and its FMT.c.  A file of its own: the formats call
 * export.c, and only this table calls them.
 */
#include "export.h"
#include "base/json.h"

#include <string.h>

/* In the order --help lists them (and memtrace-export(1) describes them).
 * The server's names are bytehound's where it had the format. */
const struct mt_exporter mt_exporters[] = {
	{ .name = "heaptrack",
	  .what = "heaptrack's file, for heaptrack_print and heaptrack_gui",
	  .endpoint = "heaptrack",
	  .type = "application/octet-stream",
	  .file = "heaptrack.memtrace.", /* then the recording's id */
	  .button = 1,
	  .label = "heaptrack",
	  .hint = "for heaptrack_gui / heaptrack_print",
	  .run = mt_export_heaptrack },
	{ .name = "folded",
	  .what = "folded stacks (flamegraph.pl, inferno), weighted by --weight",
	  .weight = 1,
	  .endpoint = "flamegraph.pl",
	  .type = "text/plain; charset=utf-8",
	  .button = 3,
	  .label = "flamegraph.pl",
	  .hint = "folded stacks for flamegraph.pl",
	  .run = mt_export_folded },
	{ .name = "svg",
	  .what = "an interactive flamegraph (hover, click to zoom, search), by --weight",
	  .weight = 2,
	  .base = 1,
	  .endpoint = "flamegraph",
	  .type = "image/svg+xml",
	  .button = 2,
	  .label = "flamegraph.svg",
	  .hint = "an interactive SVG flamegraph",
	  .run = mt_export_svg },
	{ .name = "pprof",
	  .what = "pprof's profile.proto, gzipped (go tool pprof, Pyroscope, Parca)",
	  .binary = 1,
	  .endpoint = "pprof",
	  .type = "application/octet-stream",
	  .button = 4,
	  .label = "pprof",
	  .hint = "gzipped profile.proto for go tool pprof",
	  .run = mt_export_pprof },
	{ .name = "massif",
	  .what = "valgrind massif's file, for ms_print and massif-visualizer",
	  .endpoint = "massif",
	  .type = "text/plain; charset=utf-8",
	  .button = 5,
	  .label = "massif",
	  .hint = "for ms_print and massif-visualizer",
	  .run = mt_export_massif },
	{ .name = "gprof2dot",
	  .what = "memtrail's gprof2dot JSON (gprof2dot -f json)",
	  .weight = 4,
	  .endpoint = "gprof2dot",
	  .type = "application/json",
	  .button = 7,
	  .label = "gprof2dot",
	  .hint = "for gprof2dot -f json",
	  .run = mt_export_gprof2dot },
	{ .name = "speedscope",
	  .what = "speedscope's JSON (bytes and allocations per stack)",
	  .weight = 3,
	  .endpoint = "speedscope",
	  .type = "application/json",
	  .button = 6,
	  .label = "speedscope",
	  .hint = "for speedscope",
	  .run = mt_export_speedscope },
	{ .name = "json",
	  .what = "every allocation with its stack (--per-site: per-site aggregates)",
	  .endpoint = "json",
	  .type = "application/json",
	  .button = 8,
	  .label = "json",
	  .hint = "every allocation with its stack",
	  .run = mt_export_json },
	{ .name = "html",
	  .what = "one self-contained page: summary, memory over time, flamegraph, call sites",
	  .weight = 5,
	  .base = 1,
	  .endpoint = "html",
	  .type = "text/html; charset=utf-8",
	  .button = 9,
	  .label = "html",
	  .hint = "this report as one self-contained page",
	  .run = mt_export_html },
	{ .name = NULL },
};

const struct mt_exporter *mt_exporter_named(const char *name)
{
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

const struct mt_exporter *mt_exporter_at(const char *endpoint)
{
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		if (!strcmp(e->endpoint, endpoint))
			return e;
	return NULL;
}

const struct mt_exporter *mt_exporter_weighted(int place)
{
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		if (e->weight == place)
			return e;
	return NULL;
}

const struct mt_exporter *mt_exporter_button(int place)
{
	for (const struct mt_exporter *e = mt_exporters; e->name; e++)
		if (e->button == place)
			return e;
	return NULL;
}

void mt_export_buttons_json(FILE *f)
{
	const struct mt_exporter *e;
	fputc('[', f);
	for (int i = 1; (e = mt_exporter_button(i)); i++) {
		fputs(i > 1 ? ", [" : "[", f);
		mt_json_str_html(f, e->endpoint);
		fputs(", ", f);
		mt_json_str_html(f, e->label);
		fputs(", ", f);
		mt_json_str_html(f, e->hint);
		fputc(']', f);
	}
	fputc(']', f);
}

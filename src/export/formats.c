/*
 * formats.c - the table of export formats (export.h's mt_exporters), for
 * `memtrace export --format` and the server's export endpoints.  A file of
 * its own: the formats call export.c, and only this table calls them.
 */
#include "export.h"

const struct mt_exporter mt_exporters[] = {
	{ .name = "heaptrack",
	  .what = "heaptrack's file, for heaptrack_print and heaptrack_gui",
	  .binary = 0,
	  .run = mt_export_heaptrack },
	{ .name = "folded",
	  .what = "folded stacks (flamegraph.pl, inferno), weighted by --weight",
	  .binary = 0,
	  .run = mt_export_folded },
	{ .name = "svg",
	  .what = "an interactive flamegraph (hover, click to zoom, search), by --weight",
	  .binary = 0,
	  .run = mt_export_svg },
	{ .name = "pprof",
	  .what = "pprof's profile.proto, gzipped (go tool pprof, Pyroscope, Parca)",
	  .binary = 1,
	  .run = mt_export_pprof },
	{ .name = "massif",
	  .what = "valgrind massif's file, for ms_print and massif-visualizer",
	  .binary = 0,
	  .run = mt_export_massif },
	{ .name = "gprof2dot",
	  .what = "memtrail's gprof2dot JSON (gprof2dot -f json)",
	  .binary = 0,
	  .run = mt_export_gprof2dot },
	{ .name = "speedscope",
	  .what = "speedscope's JSON (bytes and allocations per stack)",
	  .binary = 0,
	  .run = mt_export_speedscope },
	{ .name = "json",
	  .what = "every allocation with its stack (--per-site: per-site aggregates)",
	  .binary = 0,
	  .run = mt_export_json },
	{ .name = "html",
	  .what = "one self-contained page: summary, memory over time, flamegraph, call sites",
	  .binary = 0,
	  .run = mt_export_html },
	{ .name = NULL },
};

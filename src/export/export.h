/*
 * export.h - `memtrace export`: one file per format (FMT.c), each
 * a function that writes a (filtered) recording in another tool's format.
 *
 * An exporter reads figures from x->sel->matched (per-site totals, the peak,
 * leaks: analyse/figures.h's, so every format agrees with `memtrace report`),
 * and, when it needs the events in time order, replays them with
 * mt_select_replay.  It writes to x->out; x->pid selects a process (-1:
 * every process, for the formats that can hold several).
 */
#ifndef MEMTRACE_EXPORT_H
#define MEMTRACE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "report/report.h"
#include "analyse/sites.h"
#include "analyse/select.h"

/* What a flamegraph's widths measure (--weight). */
enum mt_weight { MT_W_BYTES, MT_W_ALLOCATIONS, MT_W_LEAKED, MT_W_PEAK, MT_W_TEMPORARY };
extern const char *const mt_weight_names[];

struct mt_export_ctx {
	struct mt_selection *sel;
	long pid;	   /* -1: every process */
	const char *image; /* --image (analyse/images.h); NULL: every image */
	enum mt_weight weight;
	int weight_set; /* --weight given */
	int per_site;	/* json: per-site aggregates instead of every allocation */
	FILE *out;
	const char *out_path;	   /* NULL: stdout */
	struct mt_selection *base; /* --base: svg and html draw NEW's widths
				      * coloured by change */
};

/* A format: one entry of mt_exporters (formats.c) says all that the CLI's
 * help, the server's endpoints and the GUI's downloads say of it.  A place
 * is a position in a list, 1 first; 0: not in that list. */
struct mt_exporter {
	const char *name; /* --format NAME */
	const char *what; /* one line for --help */
	int binary;	  /* refuses a terminal as output */
	int weight;	  /* draws by --weight (the server's weight parameter):
			   * its place in that option's help */
	int base;	  /* draws a differential flamegraph against --base */
	/* the server's /data/<id>/export/ENDPOINT, its Content-Type, and the
	 * download's name when the URL gives none: FILE then the recording's
	 * id (NULL: none) */
	const char *endpoint, *type, *file;
	/* the GUI's download button: its place, text and tooltip */
	int button;
	const char *label, *hint;
	int (*run)(struct mt_export_ctx *x, char *err, size_t errlen);
};

/* The formats in the order of --help, then one with a NULL name. */
extern const struct mt_exporter mt_exporters[];

/* The format called NAME (by --format), served at ENDPOINT, or at PLACE
 * among those --weight names or among the GUI's buttons; NULL if none. */
const struct mt_exporter *mt_exporter_named(const char *name);
const struct mt_exporter *mt_exporter_at(const char *endpoint);
const struct mt_exporter *mt_exporter_weighted(int place);
const struct mt_exporter *mt_exporter_button(int place);

/* The GUI's download buttons as JSON, in their order: [[endpoint, label,
 * hint], ...], safe inside a <script> element (gui.js reads it). */
void mt_export_buttons_json(FILE *f);

/* The view whose measure (analyse/sites.h) weight W is: a site weighs
 * mt_site_measure(s, mt_weight_view(w)). */
enum mt_view mt_weight_view(enum mt_weight w);
const char *mt_weight_unit(enum mt_weight w); /* "bytes" or "allocations" */

/* What site S of process P weighs under x->weight (0: left out of a graph). */
uint64_t mt_export_site_weight(const struct mt_export_ctx *x, const struct mt_process *p,
			       uint32_t s);

/* Is process P (of x->sel->matched) selected by --pid and --image? */
int mt_export_wants(const struct mt_export_ctx *x, const struct mt_process *p);

/* The process of a FORMAT that holds one: of those --pid and --image
 * select, the main one, else the last (mt_image_lead), its index in *IDX,
 * with a note when others are left out; NULL if none. */
const struct mt_process *mt_export_one_process(const struct mt_export_ctx *x, const char *format,
					       size_t *idx);

/* A frame as one name: mt_frame_label's ("function", "module+0xoffset",
 * "0xaddress" or "[unknown]"); into BUF. */
const char *mt_frame_name(const struct mt_frame *f, char *buf, size_t len);

int mt_export_folded(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_svg(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_heaptrack(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_pprof(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_massif(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_gprof2dot(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_speedscope(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_json(struct mt_export_ctx *x, char *err, size_t errlen);
int mt_export_html(struct mt_export_ctx *x, char *err, size_t errlen);

#endif

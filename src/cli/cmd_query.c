/*
 * cmd_query.c - `memtrace query [--format F] [--save DB] [--where-only]
 * FILE [SQL]`: SQL over a recording's tables (query/db.h).  With SQL, runs
 * it; without, reads statements from standard input: on a terminal at a
 * prompt with history (GNU readline), from a pipe to its end, stopping at
 * the first statement that fails.
 */
#include "commands.h"
#include "options.h"
#include "query/db.h"
#include "query/output.h"
#include "query/where.h"
#include "base/util.h"

#include <readline/history.h>
#include <readline/readline.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memtrace query [options] FILE [SQL]\n"
	"\n"
	"Runs SQL (SQLite's) over the recording FILE seen as tables:\n"
	"  processes(pid, exe, argv, backend, duration_s, exit_status, signal,\n"
	"            lost_events, allocations, leaked_bytes, peak_bytes, ...)\n"
	"  allocations(id, pid, tid, site_id, size, address, alloc_s, free_s,\n"
	"              temporary, lifetime_s)   one row per allocation; free_s is\n"
	"              NULL for a leak; times in seconds from the process's start\n"
	"  sites(id, pid, site, allocations, allocated_bytes, leaked_allocations,\n"
	"        leaked_bytes, peak_bytes, temporary_allocations, ...)\n"
	"  frames(site_id, depth, function, file, line, module, address, inlined)\n"
	"        depth 0 is the allocator's caller\n"
	"  memory(pid, s, rss, rss_anon, rss_file, rss_shmem, vm_size, vm_data, heap)\n"
	"        the process's memory sampled every 10 ms, with the heap in use\n"
	"  mmaps(pid, s, kind, by_allocator, address, length, old_address, old_length,\n"
	"        prot, flags, fd, offset, error, path, mapped, function, file, line,\n"
	"        stack)   the mapping calls, with the mapped memory after each\n"
	"Without SQL, reads statements from standard input (a prompt on a terminal).\n"
	"\n"
	"options:\n";

static const char epilogue[] =
	"\n"
	"Example: memtrace query app.mtrace 'SELECT site_id, sum(size) FROM allocations\n"
	"           WHERE free_s IS NULL GROUP BY site_id ORDER BY 2 DESC LIMIT 5'\n"
	"man memtrace-query describes every column.\n";

struct operands {
	const char *file, *sql;
};

static int operand(void *ctx, const char *cmd, const char *arg)
{
	struct operands *o = ctx;
	if (!o->file)
		o->file = arg;
	else if (!o->sql)
		o->sql = arg;
	else
		return mt_usage_error(cmd, "too many arguments ('%s'): quote the SQL as one", arg);
	return 0;
}

static int opt_format(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	int f = val ? mt_qformat_parse(val) : -1;
	(void)arg;
	if (f < 0)
		return mt_usage_error(cmd, "--format: '%s' is none of table, csv, json",
				      val ? val : "");
	*(int *)o->target = f;
	return 0;
}

/* Statements from FILE (standard input) that is not a terminal: each runs
 * when complete; the first that fails ends the run. */
static int from_stream(sqlite3 *db, FILE *in, enum mt_qformat fmt)
{
	char *buf = NULL, *line = NULL;
	size_t len = 0, cap = 0, lcap = 0;
	ssize_t n;
	int r = 0;
	char err[512];
	while (r == 0 && (n = getline(&line, &lcap, in)) >= 0) {
		mt_grow(&buf, &cap, len + (size_t)n + 1, 1);
		memcpy(buf + len, line, (size_t)n + 1);
		len += (size_t)n;
		if (!sqlite3_complete(buf))
			continue;
		if (mt_query_run(db, buf, fmt, stdout, err, sizeof err) < 0) {
			mt_error("query: %s", err);
			r = -1;
		}
		len = 0;
	}
	/* a last statement without its ';' */
	if (r == 0 && len && mt_query_run(db, buf, fmt, stdout, err, sizeof err) < 0) {
		mt_error("query: %s", err);
		r = -1;
	}
	free(buf);
	free(line);
	return r;
}

/* The prompt: a failing statement is reported and the next one read. */
static void interactive(sqlite3 *db, enum mt_qformat fmt)
{
	char *buf = NULL, *line;
	size_t len = 0, cap = 0;
	char err[512];
	fputs("memtrace query: tables processes, allocations, sites, frames; end with Ctrl-D\n",
	      stderr);
	while ((line = readline(len ? "     ...> " : "memtrace> "))) {
		size_t n = strlen(line);
		mt_grow(&buf, &cap, len + n + 2, 1);
		memcpy(buf + len, line, n);
		len += n;
		buf[len++] = '\n';
		buf[len] = 0;
		free(line);
		if (!sqlite3_complete(buf))
			continue;
		buf[len - 1] = 0;
		add_history(buf);
		if (mt_query_run(db, buf, fmt, stdout, err, sizeof err) < 0)
			mt_error("query: %s", err);
		fflush(stdout);
		len = 0;
	}
	fputc('\n', stderr);
	free(buf);
}

int cmd_query(int argc, char **argv)
{
	int fmt = MT_QFMT_TABLE, where_only = 0;
	const char *save = NULL;
	struct operands ops = { 0 };
	const struct mt_option opts[] = {
		{ .longopt = "--format",
		  .argh = "table|csv|json",
		  .help = "how rows are written (default table)",
		  .type = MT_OPT_CALLBACK,
		  .target = &fmt,
		  .cb = opt_format },
		{ .longopt = "--save",
		  .argh = "DB",
		  .help = "write the tables to DB, an SQLite file any SQLite\n"
			  "reader opens (replaced if it exists)",
		  .type = MT_OPT_STRING,
		  .target = &save,
		  .err = "--save needs a file name",
		  .flags = MT_OPTF_NONEMPTY },
		{ .longopt = "--where-only",
		  .help = "SQL is a condition, as --where takes it: show the\n"
			  "allocations it matches",
		  .type = MT_OPT_FLAG,
		  .target = &where_only },
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = { .cmd = "query",
				       .opts = opts,
				       .usage = usage_text,
				       .col = 24,
				       .epilogue = epilogue,
				       .operands = MT_OPERANDS_EVERY,
				       .operand = operand,
				       .operand_ctx = &ops };
	int st = mt_options_parse(&cl, argc, argv, NULL);
	if (st != MT_OPTS_GO_ON)
		return st;
	if (!ops.file)
		return mt_usage_error("query", "no recording given");
	if (where_only && !ops.sql)
		return mt_usage_error("query", "--where-only needs the condition as SQL");
	struct mt_qdb q;
	char err[512];
	if (mt_qdb_open(&q, ops.file, err, sizeof err) < 0) {
		mt_error("%s", err);
		return MT_EXIT_RUNTIME;
	}
	if (q.rec.truncated)
		mt_warning("%s is truncated (%s); its tables hold what it holds", ops.file,
			   q.rec.why);
	int r = 0;
	if (save && mt_qdb_save(&q, save, err, sizeof err) < 0) {
		mt_error("%s", err);
		r = -1;
	} else if (where_only) {
		sqlite3_stmt *stmt = mt_where_prepare(q.db, "*", ops.sql, err, sizeof err);
		r = stmt ? mt_query_print(q.db, stmt, (enum mt_qformat)fmt, stdout, err,
					  sizeof err) :
			   -1;
		if (r < 0)
			mt_error("--where: %s", err);
		sqlite3_finalize(stmt);
	} else if (ops.sql) {
		r = mt_query_run(q.db, ops.sql, (enum mt_qformat)fmt, stdout, err, sizeof err);
		if (r < 0)
			mt_error("query: %s", err);
	} else if (!save) {
		if (isatty(0))
			interactive(q.db, (enum mt_qformat)fmt);
		else
			r = from_stream(q.db, stdin, (enum mt_qformat)fmt);
	}
	mt_qdb_close(&q);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		mt_error("cannot write the rows: output error");
		return MT_EXIT_RUNTIME;
	}
	return r < 0 ? MT_EXIT_RUNTIME : MT_EXIT_OK;
}

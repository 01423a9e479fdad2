/*
 * main.c - the memtrace binary: dispatches to one function per subcommand.
 */
#include "commands.h"
#include "progress.h"
#include "config.h"
#include "base/util.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ .name = "record",
	  .fn = cmd_record,
	  .summary = "run a command and record its allocations" },
	{ .name = "report",
	  .fn = cmd_report,
	  .summary = "show what a recording says: summary, leaks, peak, temporaries, frequency" },
	{ .name = "diff",
	  .fn = cmd_diff,
	  .summary = "what grew between two recordings, call site by call site" },
	{ .name = "attach",
	  .fn = cmd_attach,
	  .summary = "attach to running processes (same as memtrace -p PID)" },
	{ .name = "top", .fn = cmd_top, .summary = "periodic top call sites of running processes" },
	{ .name = "sweep", .fn = cmd_sweep, .summary = "look for leaks across the whole machine" },
	{ .name = "query",
	  .fn = cmd_query,
	  .summary = "ask SQL questions of a recording (SQLite): allocations, sites, frames" },
	{ .name = "export",
	  .fn = cmd_export,
	  .summary =
		  "write a recording in another tool's format (heaptrack, pprof, svg, html, ...)" },
	{ .name = "server",
	  .fn = cmd_server,
	  .summary = "serve recordings over HTTP: bytehound's REST API and a web page" },
	{ .name = "gather",
	  .fn = cmd_gather,
	  .summary = "take recordings from record --listen on other machines as they are made" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memtrace <command> [options] [args]\n"
		   "       memtrace -p PID [-p PID...] [options]\n"
		   "       memtrace --version | --help\n\n"
		   "memtrace records every allocation and free of a program, with whole stacks,\n"
		   "and reports where memory leaks, where it peaks, what is freed at once and\n"
		   "which call sites allocate most often.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
		"\n'memtrace <command> --help' and 'man memtrace-<command>' describe each.\n"
		"Example: memtrace record -- ./app && memtrace report --leaks memtrace.app.*.mtrace\n");
}

static int run(int argc, char **argv);

/* Whatever a command printed must have reached standard output: a help
 * or a listing written to a full disk or a closed pipe is an error too. */
int main(int argc, char **argv)
{
	/* the stages' long steps say how far they are on our terminal */
	mt_progress_install(&cli_progress);
	int st = run(argc, argv);
	if (st == MT_EXIT_OK && (fflush(stdout) != 0 || ferror(stdout))) {
		mt_error("cannot write to standard output: %s", strerror(errno ? errno : EIO));
		st = MT_EXIT_RUNTIME;
	}
	return st;
}

static int run(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return MT_EXIT_USAGE;
	}
	/* Tables of a quarter MB and more in their own mappings, returned when
	 * freed: glibc's threshold otherwise climbs with every such table freed,
	 * and the tables a load outgrows (sites, windows, hashes) stay resident
	 * in the heap: 10% more memory for reading a big recording. */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		if (argc > 2 && strcmp(cmd, "help") == 0) {
			char *sub[] = { argv[2], "--help", NULL };
			for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
				if (!strcmp(argv[2], commands[i].name))
					return commands[i].fn(2, sub);
			return mt_usage_error(NULL, "'%s' is not a memtrace command", argv[2]);
		}
		usage(stdout);
		return MT_EXIT_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("memtrace %s\n", MEMTRACE_VERSION);
		return MT_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	/* `memtrace -p PID ...` is attach, as in perf and bpftrace: -p, -pPID,
	 * --pid and --pid=PID only; a longer word such as --pidx is an unknown
	 * option of memtrace itself, not attach's (whose help would not know it
	 * either). */
	if (!strncmp(cmd, "-p", 2) || !strcmp(cmd, "--pid") || !strncmp(cmd, "--pid=", 6)) {
		argv[0] = "attach";
		return cmd_attach(argc, argv);
	}
	if (cmd[0] == '-')
		return mt_usage_error(NULL, "unknown option '%s'", cmd);
	return mt_usage_error(NULL, "'%s' is not a memtrace command", cmd);
}

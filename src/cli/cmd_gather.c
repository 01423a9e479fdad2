/*
 * cmd_gather.c - `memtrace gather [ADDR...]`: takes recordings from
 * `memtrace record --listen` on other machines while they are made
 * (stream/gather.h), one thread per recorder; with no address, from every
 * recorder that announces itself on the LAN (record --broadcast).
 */
#include "commands.h"
#include "options.h"
#include "stream/gather.h"
#include "format/wire.h"
#include "base/net.h"
#include "base/util.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: memtrace gather [options] [HOST:PORT...]\n"
	"\n"
	"Takes the recording that `memtrace record --listen` makes on another\n"
	"machine, while it is made, into a local file; resumes where it stopped\n"
	"when the connection drops or gather is restarted with the same file.\n"
	"With no address, gathers from every recorder announcing itself on the\n"
	"LAN (record --listen ... --broadcast); with a token, says what it\n"
	"found: a token is sent only to an address given here.\n"
	"\n"
	"options:\n";

static const char epilogue[] = "\n"
			       "HOST alone means port " MT_WIRE_DEFAULT_PORT
			       ".  Exit status: 0 when every recording\n"
			       "was gathered whole, 1 otherwise.  See memtrace-gather(1).\n";

#define MAX_TARGETS 64

struct gather_args {
	const char *addrs[MAX_TARGETS];
	size_t n;
};

static int take_addr(void *ctx, const char *cmd, const char *arg)
{
	struct gather_args *a = ctx;
	if (a->n == MAX_TARGETS)
		return mt_usage_error(cmd, "at most %d addresses", MAX_TARGETS);
	a->addrs[a->n++] = arg;
	return 0;
}

static void *run_one(void *arg)
{
	struct mt_gather *g = arg;
	if (mt_gather_run(g) < 0) {
		mt_error("%s", g->err);
		return (void *)1;
	}
	return NULL;
}

/* Letters, digits and . _ - only: names heard on the network become file
 * names. */
static void safe(const char *in, char *out, size_t len)
{
	size_t k = 0;
	for (; *in && k + 1 < len; in++)
		out[k++] = (strchr(".-_", *in) || (*in >= '0' && *in <= '9') ||
			    (*in >= 'a' && *in <= 'z') || (*in >= 'A' && *in <= 'Z')) ?
				   *in :
				   '_';
	if (k == 0)
		out[k++] = '_';
	else if (out[0] == '.')
		out[0] = '_'; /* no "..", no hidden files */
	out[k] = '\0';
}

/* Ctrl-C: what is on disk is whole chunks and the sidecar says which
 * recording they are of, so leaving at once loses nothing. */
static void on_interrupt(int sig)
{
	static const char msg[] = "\nmemtrace: gather interrupted; the same command resumes it\n";
	(void)sig;
	if (write(2, msg, sizeof msg - 1) < 0) {
		/* nothing more to say */
	}
	_exit(130);
}

/* The recorders that announce themselves on UDP port APORT within WAIT
 * seconds, as targets G[*N] on, their files in DIR.  Returns 0, or -1 after
 * an error message. */
static int discover(struct mt_gather *g, size_t *n, const char *dir, double wait, int aport,
		    int quiet)
{
	struct mt_heard heard[MAX_TARGETS];
	char err[256];
	if (!quiet)
		mt_note("listening %.0f s for recorders on UDP port %d", wait, aport);
	int k = mt_gather_listen(aport, wait, heard, MAX_TARGETS, err, sizeof err);
	if (k < 0) {
		mt_error("%s", err);
		return -1;
	}
	if (k == 0) {
		mt_error("no recorder announced itself on UDP port %d within %.0f s (memtrace "
			 "record --listen ADDR --broadcast)",
			 aport, wait);
		return -1;
	}
	for (int i = 0; i < k; i++) {
		struct mt_gather *t = &g[(*n)++];
		char name[64], session[64];
		safe(heard[i].name, name, sizeof name);
		safe(heard[i].session, session, sizeof session);
		snprintf(t->host, sizeof t->host, "%s", heard[i].host);
		snprintf(t->port, sizeof t->port, "%s", heard[i].port);
		snprintf(t->out, sizeof t->out, "%s/memtrace.%s.%s.mtrace", dir, name, session);
		if (!quiet)
			mt_note("found %s (pid %d) at %s:%s", name, heard[i].pid, t->host, t->port);
	}
	return 0;
}

/* An announcement proves nothing: anyone on the LAN can send one, naming
 * an address of theirs, and a token sent to every announcer goes to
 * whoever wants it.  So the token goes only to an address named on the
 * command line: with a token, what discovery found (G[0..N)) is said, with
 * the command that gathers it, and not gathered. */
static void refuse_token(const struct mt_gather *g, size_t n)
{
	char addrs[512] = "";
	size_t k = 0;
	for (size_t i = 0; i < n && k + 80 < sizeof addrs; i++)
		k += (size_t)snprintf(addrs + k, sizeof addrs - k, " %s:%s", g[i].host, g[i].port);
	mt_error("not gathered: a token goes only to an address named on the command line "
		 "(anyone on the LAN can announce itself); to gather what was found: "
		 "memtrace gather%s%s --token TOKEN",
		 addrs, k + 80 < sizeof addrs ? "" : " ...");
}

/* Gathers G[0..N), each in a thread of its own when there are several.
 * Returns whether one failed. */
static int gather_all(struct mt_gather *g, size_t n)
{
	pthread_t th[MAX_TARGETS];
	int failed = 0;
	signal(SIGINT, on_interrupt);
	signal(SIGTERM, on_interrupt);
	if (n == 1)
		return run_one(&g[0]) != NULL;
	for (size_t i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, run_one, &g[i]) != 0)
			mt_oom(sizeof th[i]);
	for (size_t i = 0; i < n; i++) {
		void *r;
		pthread_join(th[i], &r);
		failed |= r != NULL;
	}
	return failed;
}

int cmd_gather(int argc, char **argv)
{
	struct gather_args a = { .n = 0 };
	const char *output = NULL, *dir = ".", *token = getenv("MEMTRACE_TOKEN");
	double wait = 3, retry = 30;
	uint64_t aport = MT_WIRE_ANNOUNCE_PORT;
	int quiet = 0;
	const struct mt_option opts[] = {
		MT_OPT_OUTPUT(&output, "FILE",
			      "write the recording to FILE (one address only;\n"
			      "default: DIR/memtrace.gather.HOST-PORT.mtrace)"),
		{ .shortopt = "-d",
		  .longopt = "--directory",
		  .argh = "DIR",
		  .help = "where recordings go without -o (default: .)",
		  .type = MT_OPT_STRING,
		  .target = &dir,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "-d needs a directory" },
		{ .longopt = "--token",
		  .argh = "TOKEN",
		  .help = "the token the recorder printed (default:\n"
			  "$MEMTRACE_TOKEN)",
		  .type = MT_OPT_STRING,
		  .target = &token,
		  .flags = MT_OPTF_NONEMPTY,
		  .err = "--token needs the recorder's token" },
		{ .longopt = "--wait",
		  .argh = "S",
		  .help = "with no address: listen S seconds for recorders\n"
			  "announcing themselves (default 3)",
		  .type = MT_OPT_SECONDS,
		  .target = &wait,
		  .flags = MT_OPTF_POSITIVE,
		  .err = "--wait needs a positive duration: " MT_DURATION_FORMS },
		{ .longopt = "--retry",
		  .argh = "S",
		  .help = "keep trying to (re)connect for S seconds (default 30)",
		  .type = MT_OPT_SECONDS,
		  .target = &retry,
		  .err = "--retry needs a duration: " MT_DURATION_FORMS },
		{ .longopt = "--announce-port",
		  .argh = "N",
		  .help = "the UDP port announcements come to (default 8099)",
		  .type = MT_OPT_COUNT,
		  .target = &aport,
		  .max = 65535,
		  .err = "--announce-port needs a port from 1 to 65535" },
		{ .shortopt = "-q",
		  .longopt = "--quiet",
		  .help = "print nothing but errors",
		  .type = MT_OPT_FLAG,
		  .target = &quiet },
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = { .cmd = "gather",
				       .opts = opts,
				       .usage = usage_text,
				       .col = 24,
				       .epilogue = epilogue,
				       .operands = MT_OPERANDS_EVERY,
				       .operand = take_addr,
				       .operand_ctx = &a };
	int st = mt_options_parse(&cl, argc, argv, NULL);
	if (st != MT_OPTS_GO_ON)
		return st;
	if (output && a.n != 1)
		return mt_usage_error("gather", "-o goes with exactly one address");

	struct mt_gather *g = xcalloc(MAX_TARGETS, sizeof *g);
	size_t n = 0;
	for (size_t i = 0; i < a.n; i++) {
		struct mt_gather *t = &g[n++];
		snprintf(t->host, sizeof t->host, "127.0.0.1");
		snprintf(t->port, sizeof t->port, MT_WIRE_DEFAULT_PORT);
		if (mt_net_parse(a.addrs[i], t->host, sizeof t->host, t->port, sizeof t->port) <
		    0) {
			free(g);
			return mt_usage_error("gather", "'%s' is not HOST:PORT, HOST or PORT",
					      a.addrs[i]);
		}
		char h[256];
		safe(t->host, h, sizeof h);
		if (output)
			snprintf(t->out, sizeof t->out, "%s", output);
		else
			snprintf(t->out, sizeof t->out, "%s/memtrace.gather.%s-%s.mtrace", dir, h,
				 t->port);
	}
	if (a.n == 0 && discover(g, &n, dir, wait, (int)aport, quiet) < 0) {
		free(g);
		return MT_EXIT_RUNTIME;
	}
	if (a.n == 0 && token) {
		refuse_token(g, n);
		free(g);
		return MT_EXIT_RUNTIME;
	}
	for (size_t i = 0; i < n; i++) {
		g[i].token = token;
		g[i].retry = retry;
		g[i].quiet = quiet;
		g[i].progress = n == 1 && !quiet;
	}
	int failed = gather_all(g, n);
	free(g);
	return failed ? MT_EXIT_RUNTIME : MT_EXIT_OK;
}

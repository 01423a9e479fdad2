/*
 * cmd_server.c - `memtrace server [--listen ADDR:PORT] FILE...`: its
 * options; the server (server/serve.c) loads the recordings, symbolizes
 * their call sites once, and serves them over HTTP with bytehound's REST
 * API until stopped.
 */
#include "commands.h"
#include "options.h"
#include "server/server.h"
#include "base/net.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: memtrace server [--listen ADDR:PORT] FILE...\n"
	"\n"
	"Loads the recordings FILE... and serves them over HTTP: a REST API after\n"
	"bytehound's (JSON listings of allocations and call sites, a call tree,\n"
	"memory over time, flamegraph and heaptrack exports, every one narrowed by\n"
	"bytehound's allocation filters) and a page to open in a browser.  The\n"
	"recordings are numbered 0, 1, ... in the order given; `last` names the last.\n"
	"\n"
	"options:\n";

static const char epilogue[] =
	"\n"
	"Only this machine can connect unless ADDR says otherwise: the data shows\n"
	"what the traced programs did.  Off loopback every request must carry the\n"
	"access token: open the URL printed at start (it sets a cookie), or send\n"
	"`Authorization: Bearer TOKEN`.  Requests sent by pages of other sites are\n"
	"refused.  A recording that does not load is skipped (and listed with its\n"
	"error).  SIGINT or SIGTERM stops the server.\n"
	"Endpoints and their parameters: memtrace-server(1).\n";

static int opt_token(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct srv_options *at = o->target;
	(void)arg;
	if (!val || strlen(val) < 16 || strlen(val) > 64 ||
	    strspn(val, SRV_TOKEN_CHARS) != strlen(val))
		return mt_usage_error(cmd, "--token: 16 to 64 letters, digits, '-' or '_'");
	at->token = val;
	return 0;
}

static int opt_timeout(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct srv_options *at = o->target;
	uint64_t n;
	(void)arg;
	if (!val || mt_parse_u64(val, &n) || n < 1 || n > 86400)
		return mt_usage_error(cmd, "--timeout: '%s' is not seconds from 1 to 86400",
				      val ? val : "");
	at->timeout_s = (unsigned)n;
	return 0;
}

static int opt_request_memory(const char *cmd, const struct mt_option *o, const char *arg,
			      const char *val)
{
	struct srv_options *at = o->target;
	uint64_t n;
	(void)arg;
	if (!val || mt_parse_u64(val, &n) || n < 16 || n > (1u << 24))
		return mt_usage_error(cmd, "--request-memory: '%s' is not MiB from 16 to 16777216",
				      val ? val : "");
	at->request_mib = n;
	return 0;
}

static int opt_listen(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct srv_options *at = o->target;
	(void)arg;
	if (mt_net_parse(val, at->host, sizeof at->host, at->port, sizeof at->port) < 0)
		return mt_usage_error(cmd, "--listen: '%s' is not ADDR:PORT", val ? val : "");
	return 0;
}

static int opt_interface(const char *cmd, const struct mt_option *o, const char *arg,
			 const char *val)
{
	struct srv_options *at = o->target;
	(void)arg;
	if (!val || !*val || strlen(val) >= sizeof at->host)
		return mt_usage_error(cmd, "--interface needs an address");
	snprintf(at->host, sizeof at->host, "%s", val);
	return 0;
}

static int opt_port(const char *cmd, const struct mt_option *o, const char *arg, const char *val)
{
	struct srv_options *at = o->target;
	(void)arg;
	if (mt_net_port(val, at->port, sizeof at->port) < 0)
		return mt_usage_error(cmd, "--port: '%s' is not a port number", val ? val : "");
	return 0;
}

/* The recordings to serve, in the order given. */
struct file_list {
	char **v;
	size_t n;
};

static int add_file(void *ctx, const char *cmd, const char *arg)
{
	struct file_list *fl = ctx;
	(void)cmd;
	fl->v[fl->n++] = (char *)arg;
	return 0;
}

int cmd_server(int argc, char **argv)
{
	struct srv_options at = {
		.host = "127.0.0.1", .port = "8080", .timeout_s = 60, .client_connections = 64
	};
	struct file_list fl = { .v = xcalloc((size_t)argc, sizeof *fl.v) };
	const struct mt_option opts[] = {
		{ .shortopt = "-l",
		  .longopt = "--listen",
		  .argh = "ADDR:PORT",
		  .help = "where to listen (default 127.0.0.1:8080); ADDR may\n"
			  "be a name or [IPv6]; PORT alone means 127.0.0.1",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_listen },
		{ .shortopt = "-i",
		  .longopt = "--interface",
		  .argh = "ADDR",
		  .help = "the address alone (bytehound's option)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_interface },
		{ .shortopt = "-p",
		  .longopt = "--port",
		  .argh = "PORT",
		  .help = "the port alone (bytehound's option)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_port },
		{ .longopt = "--token",
		  .argh = "TOKEN",
		  .help = "the access token of a server off loopback (default:\n"
			  "$MEMTRACE_TOKEN, or a random one, printed at start)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_token },
		{ .longopt = "--timeout",
		  .argh = "SECONDS",
		  .help = "a request's time budget (default 60)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_timeout },
		{ .longopt = "--request-memory",
		  .argh = "MIB",
		  .help = "what the readings of one request may take (default:\n"
			  "a quarter of the memory, shared by the workers)",
		  .type = MT_OPT_CALLBACK,
		  .target = &at,
		  .cb = opt_request_memory },
		{ .longopt = "--max-connections",
		  .argh = "N",
		  .help = "connections open at once (default: as many as the\n"
			  "descriptors allow, at most 2048)",
		  .type = MT_OPT_COUNT32,
		  .target = &at.max_connections,
		  .max = 65535 },
		{ .longopt = "--client-connections",
		  .argh = "N",
		  .help = "of them, what one client may hold: a local user, or\n"
			  "a remote address (default 64)",
		  .type = MT_OPT_COUNT32,
		  .target = &at.client_connections,
		  .max = 65535 },
		{ .type = MT_OPT_END },
	};
	const struct mt_cmdline cl = { .cmd = "server",
				       .opts = opts,
				       .usage = usage_text,
				       .col = 26,
				       .epilogue = epilogue,
				       .operands = MT_OPERANDS_EVERY,
				       .dashdash = 1,
				       .operand = add_file,
				       .operand_ctx = &fl };
	int status = mt_options_parse(&cl, argc, argv, NULL);
	if (status == MT_OPTS_GO_ON && !fl.n)
		status = mt_usage_error("server", "no recording given");
	if (status == MT_OPTS_GO_ON)
		status = srv_serve(&at, fl.v, fl.n);
	free(fl.v);
	return status;
}

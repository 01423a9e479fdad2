/*
 * log.c - the shim's messages (MEMTRACE_LOG), to stderr or MEMTRACE_LOGFILE.
 *
 * A message is formatted on the stack and written with one write(2): no
 * stdio buffer, no heap, and lines of several threads do not interleave.
 * The log file's descriptor is kept high, and opened again when the program
 * closed it (fds.c).  Level 0 is for what must be said unless the log is
 * "off": that a process is not traced.
 */
#include "shim.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static int log_fd = 2;
static char log_path[4096];
static struct mt_fd_id log_id;

static int open_log(void)
{
	struct mt_fd_id id;
	int fd = mt_fd_place(open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600), &id);
	if (fd >= 0)
		log_id = id;
	return fd;
}

void mt_log_open(void)
{
	const char *lf = mt_cfg.logfile;
	if (!lf || !*lf || mt_cfg.log_level <= 0)
		return;
	mt_expand_path(log_path, sizeof log_path, lf);
	mt_fd_absolute(log_path, sizeof log_path);
	int fd = open_log();
	if (fd >= 0)
		log_fd = fd;
}

void mt_log(int level, const char *fmt, ...)
{
	if (level > mt_cfg.log_level)
		return;
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "memtrace[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (log_fd != 2 && !mt_fd_is(log_fd, &log_id)) {
		int fd = open_log(); /* the program closed it */
		log_fd = fd >= 0 ? fd : 2;
	}
	if (write(log_fd, buf, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
}

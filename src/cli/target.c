/*
 * target.c - see target.h.  The ELF inspection is libelf's: a program
 * without a PT_INTERP header has no loader to preload anything.
 */
#include "target.h"
#include "config.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when PATH is an ELF file without a program interpreter. */
static int is_static(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int result = 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n;
	if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
		int interp = 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				interp = 1;
		}
		result = !interp;
	}
	if (e)
		elf_end(e);
	close(fd);
	return result;
}

int mt_preload_blocked(const char *path, char *why, size_t len)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return 0;
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		snprintf(why, len,
			 "%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it",
			 path);
		return 1;
	}
	if (is_static(path)) {
		snprintf(why, len,
			 "%s is statically linked: there is no dynamic loader to preload the shim",
			 path);
		return 1;
	}
	return 0;
}

char *mt_resolve_command(const char *cmd)
{
	if (strchr(cmd, '/'))
		return access(cmd, F_OK) == 0 ? xstrdup(cmd) : NULL;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		char buf[PATH_MAX];
		snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? path : ".", cmd);
		if (access(buf, X_OK) == 0)
			return xstrdup(buf);
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

/* Why PATH cannot be the shim (NULL: it can): the loader would refuse it
 * with a message of its own and run the command untraced. */
static const char *not_a_library(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return strerror(errno);
	struct stat st;
	const char *why = NULL;
	Elf *e = NULL;
	GElf_Ehdr eh;
	size_t n;
	elf_version(EV_CURRENT);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		why = "is not a regular file";
	else if (!(e = elf_begin(fd, ELF_C_READ, NULL)) || elf_kind(e) != ELF_K_ELF ||
		 !gelf_getehdr(e, &eh) || elf_getphdrnum(e, &n) != 0)
		why = "is not an ELF file";
	else if (eh.e_type != ET_DYN)
		why = "is not a shared library";
	for (size_t i = 0; !why && i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
			why = "is a program, not a shared library";
	}
	if (e)
		elf_end(e);
	close(fd);
	return why;
}

int mt_find_shim(char *out, size_t len, char *why, size_t whylen)
{
	const char *env = getenv("MEMTRACE_SHIM");
	if (env && *env) {
		snprintf(out, len, "%s", env);
		const char *bad = not_a_library(out);
		if (bad)
			snprintf(why, whylen, "MEMTRACE_SHIM=%s: %s", out, bad);
		return bad ? -1 : 0;
	}
	snprintf(why, whylen,
		 "cannot find libmemtrace-preload.so (looked next to memtrace and in %s; set "
		 "MEMTRACE_SHIM)",
		 MEMTRACE_LIBDIR);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(out, len, "%s/libmemtrace-preload.so", dirname(self));
		if (access(out, R_OK) == 0)
			return 0;
	}
	snprintf(out, len, "%s/libmemtrace-preload.so", MEMTRACE_LIBDIR);
	return access(out, R_OK);
}

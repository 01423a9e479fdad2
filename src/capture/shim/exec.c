/*
 * exec.c - which process is the command, and what becomes of it at exec.
 *
 * `memtrace record` names the command's process in MEMTRACE_MAIN (its pid,
 * ten digits).  Without --follow-forks that process is traced through every
 * exec, since wrappers (env, nice, sh -c "exec ...", a pyenv shim) run the
 * program the user named in the same process; no other process is.  A
 * wrapper that runs the program in a child and waits for it (timeout,
 * time) hands the role to the child it forks, by rewriting the variable in
 * place: the program that child execs is then the one traced.
 *
 * Before an exec the shim writes what will become of the image: traced as
 * an entry of its own, or not, and why (its environment lost LD_PRELOAD,
 * the program is static, set-user-ID or 32-bit), so the recorder can say
 * which program went untraced.  Under `memtrace record` as root, the
 * command's process asks the recorder first to trace such an image with
 * the BPF backend (collect/fallback.c), and waits for it.  All of this runs at start-up, fork and
 * exec, never per event: it may make system calls, but uses no heap.
 */
#include "shim.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

extern char **environ;

#define MAIN_VAR "MEMTRACE_MAIN="

static void put_pid10(char *out, uint32_t pid)
{
	for (int i = 9; i >= 0; i--, pid /= 10)
		out[i] = (char)('0' + pid % 10);
	out[10] = 0;
}

int mt_main_claim(void)
{
	uint32_t me = (uint32_t)getpid();
	if (mt_cfg.main_pid)
		return mt_cfg.main_pid == me;
	/* Standalone (or an older recorder): this process is where it starts. */
	char v[11];
	put_pid10(v, me);
	setenv("MEMTRACE_MAIN", v, 1);
	mt_cfg.main_pid = me;
	return 1;
}

void mt_main_handover(void)
{
	/* In place, in the child of a fork: setenv could allocate, and the
	 * value has room for any pid. */
	uint32_t me = (uint32_t)getpid();
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, MAIN_VAR, sizeof MAIN_VAR - 1) &&
		    strlen(*e + sizeof MAIN_VAR - 1) == 10) {
			put_pid10(*e + sizeof MAIN_VAR - 1, me);
			mt_cfg.main_pid = me;
			return;
		}
}

int mt_is_waiting_wrapper(void)
{
	/* Programs that run their command in a child and wait for it; those
	 * that exec it (env, nice, nohup, stdbuf, chrt, taskset...) need
	 * nothing.  (setsid forks when it leads its process group.) */
	static const char *const names[] = { "timeout", "time", "flock", "setsid", "unshare" };
	char exe[4096];
	if (mt_read_self_exe(exe, sizeof exe) < 0)
		return 0;
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strcmp(base, names[i]))
			return 1;
	return 0;
}

static const char *env_get(char *const envp[], const char *name)
{
	size_t n = strlen(name);
	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* Whether LD_PRELOAD (VALUE) names a file called like the shim. */
static int preloads_shim(const char *value)
{
	static const char self[] = "libmemtrace-preload.so";
	for (const char *p = value; p && *p;) {
		size_t n = strcspn(p, ": ");
		const char *base = memrchr(p, '/', n);
		base = base ? base + 1 : p;
		if ((size_t)(p + n - base) == sizeof self - 1 &&
		    !memcmp(base, self, sizeof self - 1))
			return 1;
		p += n;
		while (*p == ':' || *p == ' ')
			p++;
	}
	return 0;
}

/* FILE as execvp finds it: in PATH (of this process's environment) when it
 * has no '/'.  OUT gets it; returns 0, or -1 if it is not found. */
static int resolve(const char *file, int search, char *out, size_t len)
{
	if (!search || strchr(file, '/')) {
		if (strlen(file) >= len)
			return -1;
		strcpy(out, file);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		size_t n = strcspn(p, ":");
		if (n + strlen(file) + 2 <= len) {
			memcpy(out, n ? p : ".", n ? n : 1);
			size_t o = n ? n : 1;
			out[o++] = '/';
			strcpy(out + o, file);
			if (access(out, X_OK) == 0)
				return 0;
		}
		p += n;
		if (!*p)
			return -1;
	}
}

/* Why the program at PATH cannot load the shim, or NULL.  DEPTH bounds the
 * #! interpreters followed. */
static const char *image_blocks_shim(const char *path, int depth)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL; /* the exec will fail, or the kernel reads what we cannot */
	const char *why = NULL;
	struct stat st;
	Elf64_Ehdr eh;
	ssize_t n = pread(fd, &eh, sizeof eh, 0);
	if (fstat(fd, &st) == 0 && ((st.st_mode & S_ISUID && st.st_uid != geteuid()) ||
				    (st.st_mode & S_ISGID && st.st_gid != getegid()))) {
		why = "it is set-user-ID or set-group-ID (the loader ignores LD_PRELOAD)";
	} else if (geteuid() != 0 && fgetxattr(fd, "security.capability", NULL, 0) > 0) {
		why = "it has file capabilities (the loader ignores LD_PRELOAD)";
	} else if (n >= 2 && !memcmp(&eh, "#!", 2)) {
		/* a script: what matters is its interpreter */
		char *s = (char *)&eh, interp[sizeof eh];
		size_t i = 2, o = 0;
		while (i < (size_t)n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		while (i < (size_t)n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' &&
		       o + 1 < sizeof interp)
			interp[o++] = s[i++];
		interp[o] = 0;
		if (o && depth < 2)
			why = image_blocks_shim(interp, depth + 1);
	} else if (n == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
			why = "it is a 32-bit program";
		} else if (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) {
			int interp = 0;
			for (unsigned i = 0; i < eh.e_phnum && i < 256 && !interp; i++) {
				Elf64_Phdr ph;
				if (pread(fd, &ph, sizeof ph,
					  (off_t)(eh.e_phoff + i * sizeof ph)) !=
				    (ssize_t)sizeof ph)
					break;
				interp = ph.p_type == PT_INTERP;
			}
			if (!interp)
				why = "it is statically linked";
		}
	}
	close(fd);
	return why;
}

static void write_exec(enum mt_exec outcome, const char *path, const char *why)
{
	size_t plen = strnlen(path, 4096), wlen = why ? strlen(why) : 0;
	uint64_t ts = mt_now();
	mt_channel_lock();
	uint8_t *w = mt_channel_reserve(64 + plen + wlen);
	if (w)
		mt_channel_commit(mt_enc_exec(w, ts, outcome, path, plen, why ? why : "", wlen));
	mt_channel_unlock();
}

void mt_exec_note(const char *file, int search, char *const envp[], int main_role)
{
	char path[4096];
	if (!file || resolve(file, search, path, sizeof path) < 0)
		return; /* the exec will fail */
	const char *why = NULL;
	if (!preloads_shim(env_get(envp, "LD_PRELOAD")))
		why = "its environment has no LD_PRELOAD of the shim (cleared, as env -i does)";
	else if (mt_cfg.connect && !env_get(envp, "MEMTRACE_CONNECT"))
		why = "its environment has no MEMTRACE_CONNECT (cleared, as env -i does)";
	else if (main_role && !mt_cfg.follow_forks && !env_get(envp, "MEMTRACE_MAIN"))
		why = "its environment has no MEMTRACE_MAIN (cleared, as env -i does)";
	else
		why = image_blocks_shim(path, 0);
	/* The command's image the shim cannot follow: as root the recorder
	 * can trace it with the BPF backend, which it then says (a process
	 * entry of its own follows, backend "bpf"). */
	if (why && main_role && mt_channel_ask_fallback(path))
		why = NULL;
	write_exec(why ? MT_EXEC_UNTRACED : MT_EXEC_TRACED, path, why);
}

void mt_exec_failed(const char *file)
{
	write_exec(MT_EXEC_FAILED, file ? file : "", NULL);
}

/*
 * procmaps.c - see procmaps.h.
 *
 * An object's load bias is found from its first mapping: the mapping of file
 * offset OFF at address START lies in the PT_LOAD segment that contains OFF,
 * so bias = START - (p_vaddr + OFF - p_offset).
 *
 * Objects are opened with mt_proc_open_object, never by the path the maps
 * give: that path is resolved by whoever reads it, and in a chroot or a
 * container it is the process's owner who decides what it names.  Root's
 * `memtrace -p` on a jailed process used to open a FIFO planted there (and
 * hang for good) or follow a symbolic link out to any host file.
 */
#include "procmaps.h"
#include "base/hash.h"
#include "base/ptrmap.h"
#include "base/util.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int mt_elf_bias(int fd, uint64_t start, uint64_t offset, uint64_t *bias, uint8_t *build_id,
		size_t *build_id_len)
{
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	int r = -1;
	size_t n;
	*build_id_len = 0;
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &n) != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && r < 0 && offset >= (ph.p_offset & ~0xfffull) &&
		    offset < ph.p_offset + ph.p_filesz) {
			*bias = start - (ph.p_vaddr + offset - ph.p_offset);
			r = 0;
		}
		if (ph.p_type == PT_NOTE && !*build_id_len) {
			Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
							   ELF_T_NHDR);
			size_t off = 0, name_off, desc_off;
			GElf_Nhdr nh;
			while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
				    !memcmp((char *)d->d_buf + name_off, "GNU", 4) &&
				    nh.n_descsz <= 64) {
					memcpy(build_id, (char *)d->d_buf + desc_off, nh.n_descsz);
					*build_id_len = nh.n_descsz;
					break;
				}
			}
		}
	}
out:
	if (e)
		elf_end(e);
	return r;
}

/* ---- opening another process's objects --------------------------------- */

static const char *file_kind(mode_t m)
{
	return S_ISLNK(m)  ? "a symbolic link" :
	       S_ISFIFO(m) ? "a FIFO" :
	       S_ISSOCK(m) ? "a socket" :
	       S_ISCHR(m)  ? "a character device" :
	       S_ISBLK(m)  ? "a block device" :
	       S_ISDIR(m)  ? "a directory" :
			     "not a regular file";
}

/* The file PFD (O_PATH) names, opened for reading once it is known to be a
 * regular file of inode INO and of a sane size.  Reopening through
 * /proc/self/fd reaches that very inode; nothing else is opened. */
static int reopen_checked(int pfd, uint64_t ino, char *why, size_t whylen)
{
	struct stat st, st2;
	char self[64];

	if (fstat(pfd, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "%s, not a regular file", file_kind(st.st_mode));
		errno = EINVAL;
		return -1;
	}
	/* the inode only: /proc/PID/maps gives the device of the file under an
	 * overlay or a btrfs subvolume, where stat gives the upper one */
	if ((uint64_t)st.st_ino != ino) {
		snprintf(why, whylen, "not the file it maps (inode %llu, not %llu)",
			 (unsigned long long)st.st_ino, (unsigned long long)ino);
		errno = ESTALE;
		return -1;
	}
	if ((uint64_t)st.st_size > MT_OBJECT_MAX_BYTES) {
		snprintf(why, whylen, "larger than %llu GiB",
			 (unsigned long long)(MT_OBJECT_MAX_BYTES >> 30));
		errno = EFBIG;
		return -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
		close(fd);
		snprintf(why, whylen, "changed while it was opened");
		errno = ESTALE;
		return -1;
	}
	return fd;
}

/* PATH (as we see it: the maps are written from our root) resolved inside
 * the root of process PID, looked at without opening it: O_PATH. */
static int open_in_root(pid_t pid, const char *path, char *why, size_t whylen)
{
	char rootlink[64], rootname[PATH_MAX];
	snprintf(rootlink, sizeof(rootlink), "/proc/%d/root", (int)pid);
	int rfd = open(rootlink, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -1;
	/* A chroot's paths are ours, its root's name in front: inside its
	 * root they are the rest.  (A container's are its own already.) */
	const char *rel = path;
	ssize_t n = readlink(rootlink, rootname, sizeof(rootname) - 1);
	if (n > 1 && (size_t)n < sizeof(rootname) - 1 && !strncmp(path, rootname, (size_t)n) &&
	    path[n] == '/')
		rel = path + n;
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int pfd = (int)syscall(SYS_openat2, rfd, rel, &how, sizeof(how));
	int e = errno;
	close(rfd);
	if (pfd < 0 && e == ENOSYS)
		snprintf(why, whylen, "cannot be opened safely without openat2 (Linux 5.6)");
	errno = e;
	return pfd;
}

int mt_proc_open_object(pid_t pid, uint64_t lo, uint64_t hi, uint64_t ino, const char *path,
			char *why, size_t whylen)
{
	char mapfile[96];
	why[0] = 0;
	snprintf(mapfile, sizeof(mapfile), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)lo, (unsigned long long)hi);
	/* the magic link to the inode mapped: the one thing followed */
	int pfd = open(mapfile, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		pfd = open_in_root(pid, path, why, whylen);
	if (pfd < 0)
		return -1;
	int fd = reopen_checked(pfd, ino, why, whylen);
	int e = errno;
	close(pfd);
	errno = e;
	return fd;
}

void mt_proc_warn_skipped(pid_t pid, const char *path, const char *why)
{
	static struct mt_ptrmap warned; /* hash(pid, path) | 1 -> 1 */
	uint64_t h = mt_hash64((uint64_t)pid);
	uint64_t v;

	for (const char *c = path; *c; c++)
		h = mt_hash_combine(h, (unsigned char)*c);
	h |= 1;
	if (!warned.keys)
		mt_ptrmap_xinit(&warned, 64);
	if (mt_ptrmap_get(&warned, h, &v))
		return;
	mt_ptrmap_xput(&warned, h, 1);
	mt_warning("process %d: skipping %s: %s", (int)pid, path, why);
}

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap + 1);
	ssize_t k;
	while ((k = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)k;
		if (n == cap)
			buf = xrealloc(buf, (cap *= 2) + 1);
	}
	int e = errno;
	close(fd);
	if (k < 0) {
		free(buf);
		errno = e;
		return NULL;
	}
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

int mt_maps_next(FILE *f, char **buf, size_t *cap, struct mt_maps_line *l)
{
	ssize_t n;

	while ((n = getline(buf, cap, f)) > 0) {
		char *line = *buf;
		unsigned long long lo, hi, off, ino;
		int pos = 0;

		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, l->perms, &off,
			   &l->maj, &l->min, &ino, &pos) < 7 ||
		    !pos)
			continue;
		l->lo = lo;
		l->hi = hi;
		l->off = off;
		l->ino = ino;
		l->path = line + pos;
		return 1;
	}
	return 0;
}

int mt_maps_each(pid_t pid, mt_maps_fn fn, void *ctx)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	struct mt_maps_line l;
	int r = 0;
	while (!r && mt_maps_next(f, &line, &cap, &l))
		r = fn(ctx, &l);
	int e = errno;
	if (!r && ferror(f))
		r = -1;
	free(line);
	fclose(f);
	errno = e;
	return r;
}

struct pinfo_read {
	struct mt_pinfo *pi;
	size_t cap;
};

/* One line of the maps for mt_pinfo_read: a mapping of an ELF file. */
static int pinfo_mapping(void *ctx, struct mt_maps_line *ml)
{
	struct pinfo_read *pr = ctx;
	struct mt_pinfo *pi = pr->pi;
	const char *file = ml->path;
	char why[128];
	if (file[0] != '/' || strstr(file, " (deleted)"))
		return 0;
	for (size_t i = 0; i < pi->nmods; i++)
		if (!strcmp(pi->mods[i].path, file)) {
			if (ml->hi > pi->mods[i].end)
				pi->mods[i].end = ml->hi;
			return 0;
		}
	/* a new object: its first mapping gives the bias */
	/* Skipped quietly when refused: attach.c warns about the executable
	 * objects, and data files (fonts, devices) need no word. */
	struct mt_pmod nm = { .start = ml->lo, .end = ml->hi };
	int fd = mt_proc_open_object(pi->pid, ml->lo, ml->hi, ml->ino, file, why, sizeof why);
	if (fd < 0)
		return 0;
	int r = mt_elf_bias(fd, ml->lo, ml->off, &nm.bias, nm.build_id, &nm.build_id_len);
	close(fd);
	if (r < 0)
		return 0; /* not an ELF object (fonts, locale archives...) */
	nm.path = xstrdup(file);
	mt_grow(&pi->mods, &pr->cap, pi->nmods, sizeof *pi->mods);
	pi->mods[pi->nmods++] = nm;
	return 0;
}

int mt_pinfo_read(struct mt_pinfo *pi, pid_t pid)
{
	char path[64];
	memset(pi, 0, sizeof *pi);
	pi->pid = pid;
	struct pinfo_read pr = { .pi = pi };
	if (mt_maps_each(pid, pinfo_mapping, &pr) < 0 && !pi->nmods)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	char exe[4096];
	ssize_t n = readlink(path, exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		pi->exe = xstrdup(exe);
	}
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	pi->argv = slurp(path, &pi->argv_len);
	/* A program that set its title (redis-server, postgres, sshd) leaves
	 * the rest of its argument area zeroed: no empty arguments, as ps(1)
	 * shows none (the header read "/usr/bin/redis-check-rdb" and a run of
	 * spaces).  One NUL ends the last argument. */
	while (pi->argv && pi->argv_len > 1 && !pi->argv[pi->argv_len - 1] &&
	       !pi->argv[pi->argv_len - 2])
		pi->argv_len--;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	char *stat = slurp(path, NULL);
	if (stat) {
		char *rp = strrchr(stat, ')');
		int ppid;
		unsigned long long ticks;
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1)
			pi->ppid = ppid;
		/* field 22, starttime: clock ticks after boot (CLOCK_BOOTTIME) */
		if (rp &&
		    sscanf(rp + 1,
			   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d"
			   " %*d %*d %llu",
			   &ticks) == 1) {
			struct timespec boot, mono;
			clock_gettime(CLOCK_BOOTTIME, &boot);
			clock_gettime(CLOCK_MONOTONIC, &mono);
			int64_t asleep = (int64_t)(mt_timespec_ns(boot) - mt_timespec_ns(mono));
			long hz = sysconf(_SC_CLK_TCK);
			int64_t at = (int64_t)(ticks * (1000000000ull /
							(unsigned long long)(hz > 0 ? hz : 100)));
			pi->start_ns = at > asleep ? (uint64_t)(at - asleep) : 0;
		}
		free(stat);
	}
	return 0;
}

int mt_pid_alive(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	char *stat = slurp(path, NULL);
	if (!stat)
		return 0;
	char *rp = strrchr(stat, ')');
	char state = 0;
	if (rp)
		sscanf(rp + 1, " %c", &state);
	free(stat);
	return state && state != 'Z' && state != 'X';
}

int mt_pids_running(const pid_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!mt_pid_alive(pids[i])) {
			mt_error("no process %d", (int)pids[i]);
			return -1;
		}
	return 0;
}

void mt_pinfo_free(struct mt_pinfo *pi)
{
	for (size_t i = 0; i < pi->nmods; i++)
		free(pi->mods[i].path);
	free(pi->mods);
	free(pi->exe);
	free(pi->argv);
	memset(pi, 0, sizeof *pi);
}

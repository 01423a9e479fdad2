/*
 * procmaps.c - see procmaps.h.
 *
 * An object's load bias is found from its first mapping: the mapping of file
 * offset OFF at address START lies in the PT_LOAD segment that contains OFF,
 * so bias = START - (p_vaddr + OFF - p_offset).  Files are opened through
 * /proc/PID/root so that objects of processes in containers are read from
 * the container's file system.
 */
#include "procmaps.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int mt_elf_bias(const char *path, uint64_t start, uint64_t offset, uint64_t *bias,
		uint8_t *build_id, size_t *build_id_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
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
	close(fd);
	return r;
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

int mt_pinfo_read(struct mt_pinfo *pi, pid_t pid)
{
	char path[64], line[4352];
	memset(pi, 0, sizeof *pi);
	pi->pid = pid;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t cap = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		char perms[8], file[4096];
		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo, &hi, perms, &off,
			   file) < 4)
			continue;
		if (file[0] != '/' || strstr(file, " (deleted)"))
			continue;
		struct mt_pmod *m = NULL;
		for (size_t i = 0; i < pi->nmods; i++)
			if (!strcmp(pi->mods[i].path, file))
				m = &pi->mods[i];
		if (m) {
			if (hi > m->end)
				m->end = hi;
			continue;
		}
		/* a new object: its first mapping gives the bias */
		char real[4200];
		snprintf(real, sizeof real, "/proc/%d/root%s", (int)pid, file);
		struct mt_pmod nm = { .start = lo, .end = hi };
		if (mt_elf_bias(real, lo, off, &nm.bias, nm.build_id, &nm.build_id_len) < 0)
			continue; /* not an ELF object (fonts, locale archives...) */
		nm.path = xstrdup(file);
		mt_grow(&pi->mods, &cap, pi->nmods, sizeof *pi->mods);
		pi->mods[pi->nmods++] = nm;
	}
	fclose(f);
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	char exe[4096];
	ssize_t n = readlink(path, exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		pi->exe = xstrdup(exe);
	}
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	pi->argv = slurp(path, &pi->argv_len);
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
			int64_t asleep = (boot.tv_sec - mono.tv_sec) * 1000000000ll +
					 (boot.tv_nsec - mono.tv_nsec);
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

/*
 * runtime.c - see runtime.h.
 *
 * Go is known by its executable's sections (.go.buildinfo, which every Go
 * linker since 1.13 writes, or .gopclntab), static or not; Java and .NET by
 * the virtual machine's library among the process's objects, or the
 * launcher's name.  The section names are read by hand: a few hundred bytes
 * of the file, no library.
 */
#include "runtime.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *base_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path ? path : "";
}

int mt_elf_is_go(const char *path)
{
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
	if (fd < 0)
		return 0;
	int go = 0;
	Elf64_Ehdr eh;
	Elf64_Shdr strs;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
	    eh.e_shnum > 4096 ||
	    pread(fd, &strs, sizeof strs, (off_t)(eh.e_shoff + eh.e_shstrndx * sizeof strs)) !=
		    (ssize_t)sizeof strs ||
	    strs.sh_size > (1u << 20))
		goto out;
	char *names = malloc(strs.sh_size + 1);
	if (!names ||
	    pread(fd, names, strs.sh_size, (off_t)strs.sh_offset) != (ssize_t)strs.sh_size) {
		free(names);
		goto out;
	}
	names[strs.sh_size] = 0;
	for (unsigned i = 0; i < eh.e_shnum && !go; i++) {
		Elf64_Shdr sh;
		if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + i * sizeof sh)) !=
		    (ssize_t)sizeof sh)
			break;
		if (sh.sh_name < strs.sh_size)
			go = !strcmp(names + sh.sh_name, ".go.buildinfo") ||
			     !strcmp(names + sh.sh_name, ".gopclntab");
	}
	free(names);
out:
	close(fd);
	return go;
}

const char *mt_process_runtime(const struct mt_process *p)
{
	for (size_t i = 0; i < p->nmodules; i++) {
		const char *b = base_of(p->modules[i].path);
		if (!strncmp(b, "libjvm.so", 9))
			return "Java";
		if (!strncmp(b, "libcoreclr.so", 13) || !strncmp(b, "libmonosgen", 11))
			return ".NET";
	}
	const char *b = base_of(p->exe);
	if (!strcmp(b, "java"))
		return "Java";
	if (!strcmp(b, "dotnet"))
		return ".NET";
	return mt_elf_is_go(p->exe) ? "Go" : NULL;
}

const char *mt_runtime_hint(const char *runtime)
{
	if (!strcmp(runtime, "Go"))
		return "the Go heap is Go's own and invisible to memtrace (only C allocations, "
		       "through cgo, are seen); use Go's profiler (runtime/pprof, go tool pprof)";
	if (!strcmp(runtime, "Java"))
		return "the Java heap is the JVM's own and invisible to memtrace (only the JVM's "
		       "native allocations are seen); use a heap profiler of the JVM (jcmd "
		       "GC.heap_info, JFR, a heap dump)";
	return "the .NET heap is the runtime's own and invisible to memtrace (only native "
	       "allocations are seen); use dotnet-gcdump or dotnet-counters";
}

/*
 * managed.c - see managed.h.
 *
 * Go is known by its executable's sections (.go.buildinfo, which every Go
 * linker since 1.13 writes, or .gopclntab), static or not; Java and .NET by
 * the virtual machine's library among the process's objects, or the
 * launcher's name.  The section names come from libelf, which reads only
 * the section headers and their string table.
 */
#include "managed.h"
#include "base/util.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
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
	int fd = path ? mt_open_recorded(path, NULL, 0) : -1;
	if (fd < 0)
		return 0;
	int go = 0;
	size_t shstrndx;
	/* libelf: any class and byte order (a recording made on a 32-bit or
	 * big-endian board is read here too) */
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && elf_getshdrstrndx(e, &shstrndx) == 0) {
		for (Elf_Scn *scn = elf_nextscn(e, NULL); scn && !go; scn = elf_nextscn(e, scn)) {
			GElf_Shdr sh;
			const char *name =
				gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
			go = name &&
			     (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".gopclntab"));
		}
	}
	elf_end(e);
	close(fd);
	return go;
}

const char *mt_managed_runtime(const struct mt_process *p)
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

const char *mt_managed_hint(const char *runtime)
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

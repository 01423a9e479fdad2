/*
 * test_objwrite.c - unit tests of format/objwrite.c, the writer of module
 * files as OBJECT records that record --embed-binaries and the shim share:
 * the build-id read from ELF files made here byte by byte (both classes,
 * notes aligned to 4 and to 8, a foreign byte order) and from this very
 * program, against the one the loader holds in memory; a file cut in
 * 1 MiB pieces that read back to the same bytes, across buffer flushes;
 * a file whose build-id changed, a FIFO, a directory and a missing file
 * left out with their reasons; a failed write stopping all writes.
 */
#include "format/codec.h"
#include "format/objwrite.h"
#include "../check.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n);
	if (fd >= 0)
		close(fd);
}

/* Appends a note (NAME, TYPE, DESC) padded to ALIGN at *AT of BUF. */
static void put_note(uint8_t *buf, size_t *at, const char *name, uint32_t type, const uint8_t *desc,
		     uint32_t dlen, size_t align)
{
	Elf64_Nhdr nh = { .n_namesz = (uint32_t)strlen(name) + 1,
			  .n_descsz = dlen,
			  .n_type = type };
	memcpy(buf + *at, &nh, sizeof nh);
	memcpy(buf + *at + sizeof nh, name, nh.n_namesz);
	size_t desc_at = (*at + sizeof nh + nh.n_namesz + align - 1) & ~(align - 1);
	memcpy(buf + desc_at, desc, dlen);
	*at = (desc_at + dlen + align - 1) & ~(align - 1);
}

/* An ELF file of CLASS with one PT_NOTE segment (ALIGN) holding, first, a
 * note of another kind whose descriptor is 12 bytes (so that 4- and
 * 8-alignment put what follows at different places), then the GNU build-id
 * ID; then FILL bytes.  Its size. */
static size_t make_elf(uint8_t *buf, int is64, size_t align, const uint8_t *id, uint32_t idlen,
		       size_t fill)
{
	size_t eh = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t ph = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t notes = 256, at = notes;
	static const uint8_t other[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	memset(buf, 0, notes + 512 + fill);
	put_note(buf, &at, "GNU", NT_GNU_PROPERTY_TYPE_0, other, sizeof other, align);
	put_note(buf, &at, "GNU", NT_GNU_BUILD_ID, id, idlen, align);
	size_t notes_len = at - notes;
	memcpy(buf, ELFMAG, SELFMAG);
	buf[EI_CLASS] = is64 ? ELFCLASS64 : ELFCLASS32;
	buf[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	buf[EI_VERSION] = EV_CURRENT;
	if (is64) {
		Elf64_Ehdr e;
		memcpy(&e, buf, sizeof e);
		e.e_type = ET_DYN;
		e.e_phoff = eh;
		e.e_phentsize = (uint16_t)ph;
		e.e_phnum = 2;
		memcpy(buf, &e, sizeof e);
		Elf64_Phdr p[2] = { { .p_type = PT_LOAD, .p_filesz = 64 },
				    { .p_type = PT_NOTE,
				      .p_offset = notes,
				      .p_filesz = notes_len,
				      .p_align = align } };
		memcpy(buf + eh, p, sizeof p);
	} else {
		Elf32_Ehdr e;
		memcpy(&e, buf, sizeof e);
		e.e_type = ET_DYN;
		e.e_phoff = (Elf32_Off)eh;
		e.e_phentsize = (uint16_t)ph;
		e.e_phnum = 2;
		memcpy(buf, &e, sizeof e);
		Elf32_Phdr p[2] = { { .p_type = PT_LOAD, .p_filesz = 64 },
				    { .p_type = PT_NOTE,
				      .p_offset = (Elf32_Off)notes,
				      .p_filesz = (Elf32_Word)notes_len,
				      .p_align = (Elf32_Word)align } };
		memcpy(buf + eh, p, sizeof p);
	}
	for (size_t i = 0; i < fill; i++)
		buf[at + i] = (uint8_t)(i * 7 + i / 251);
	return at + fill;
}

static size_t build_id_of(const char *path, uint8_t id[MT_OBJ_BUILD_ID_MAX])
{
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		return 0;
	size_t n = mt_obj_build_id(fd, id);
	close(fd);
	return n;
}

static const uint8_t ID[20] = { 0xde, 0xad, 0xbe, 0xef, 1,  2,	3,  4,	5,  6,
				7,    8,    9,	  10,	11, 12, 13, 14, 15, 16 };

static void test_build_id(void)
{
	static uint8_t buf[4096];
	char p[4200];
	uint8_t got[MT_OBJ_BUILD_ID_MAX];
	path_in(p, sizeof p, "elf");
	for (int is64 = 0; is64 < 2; is64++)
		for (size_t align = 4; align <= 8; align += 4) {
			write_file(p, buf, make_elf(buf, is64, align, ID, sizeof ID, 0));
			memset(got, 0, sizeof got);
			CHECK_EQ(build_id_of(p, got), sizeof ID);
			CHECK(!memcmp(got, ID, sizeof ID));
		}
	/* another byte order: not this machine's */
	size_t n = make_elf(buf, 1, 4, ID, sizeof ID, 0);
	buf[EI_DATA] = buf[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
	write_file(p, buf, n);
	CHECK_EQ(build_id_of(p, got), 0);
	/* a note that runs past its segment */
	n = make_elf(buf, 1, 4, ID, sizeof ID, 0);
	Elf64_Phdr ph;
	memcpy(&ph, buf + sizeof(Elf64_Ehdr) + sizeof ph, sizeof ph);
	ph.p_filesz -= 4;
	memcpy(buf + sizeof(Elf64_Ehdr) + sizeof ph, &ph, sizeof ph);
	write_file(p, buf, n);
	CHECK_EQ(build_id_of(p, got), 0);
	/* no ELF */
	write_file(p, "#!/bin/sh\nexit 0\n", 17);
	CHECK_EQ(build_id_of(p, got), 0);
}

/* This program's build-id as the loader has it in memory. */
static int self_in_memory(struct dl_phdr_info *info, size_t size, void *ctx)
{
	uint8_t *out = ctx; /* length, then the id */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *n = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= ph->p_memsz;) {
			const ElfW(Nhdr) *nh = (const void *)(n + at);
			size_t desc = at + sizeof *nh + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_descsz <= MT_OBJ_BUILD_ID_MAX) {
				out[0] = (uint8_t)nh->n_descsz;
				memcpy(out + 1, n + desc, nh->n_descsz);
				return 1;
			}
			at = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1; /* the first object is this program */
}

static void test_self(void)
{
	uint8_t mem[1 + MT_OBJ_BUILD_ID_MAX] = { 0 }, got[MT_OBJ_BUILD_ID_MAX];
	dl_iterate_phdr(self_in_memory, mem);
	CHECK(mem[0] > 0); /* (Debian's gcc links with --build-id) */
	CHECK_EQ(build_id_of("/proc/self/exe", got), mem[0]);
	CHECK(!memcmp(got, mem + 1, mem[0]));
}

static void test_debug_path(void)
{
	static const uint8_t id[3] = { 0xab, 0x0c, 0xef };
	char out[128];
	mt_obj_debug_path(id, sizeof id, out, sizeof out);
	CHECK(!strcmp(out, "/usr/lib/debug/.build-id/ab/0cef.debug"));
	mt_obj_debug_path(id, 1, out, sizeof out);
	CHECK(!strcmp(out, "/usr/lib/debug/.build-id/ab/.debug"));
	mt_obj_debug_path(id, sizeof id, out, 10);
	CHECK(!strcmp(out, "/usr/lib/"));
}

static void test_open(void)
{
	char p[4200];
	uint64_t size = 0;
	path_in(p, sizeof p, "regular");
	write_file(p, "12345", 5);
	int fd = mt_obj_open(p, &size);
	CHECK(fd >= 0 && size == 5);
	if (fd >= 0)
		close(fd);
	path_in(p, sizeof p, "fifo");
	CHECK(mkfifo(p, 0600) == 0);
	errno = 0;
	CHECK(mt_obj_open(p, &size) == -1 && errno == EINVAL); /* and it did not wait */
	errno = 0;
	CHECK(mt_obj_open(dir, &size) == -1 && errno == EINVAL);
	path_in(p, sizeof p, "missing");
	errno = 0;
	CHECK(mt_obj_open(p, &size) == -1 && errno == ENOENT);
	CHECK(mt_obj_is_file("/usr/lib/libc.so.6", 18));
	CHECK(!mt_obj_is_file("[vdso]", 6));
	CHECK(!mt_obj_is_file("", 0));
	CHECK(!mt_obj_is_file("/memfd:jit (deleted)", 20));
}

/* What the writer wrote: the chunks, one after the other. */
struct sink {
	uint8_t *data;
	size_t len, cap;
	unsigned chunks;
	int fail; /* the write fails (ENOSPC) */
};

static int sink_write(void *ctx, const uint8_t *raw, size_t len)
{
	struct sink *s = ctx;
	if (s->fail) {
		errno = ENOSPC;
		return -1;
	}
	CHECK(len <= MT_OBJ_BUF_MIN);
	if (s->len + len > s->cap) {
		s->cap = 2 * (s->len + len);
		s->data = realloc(s->data, s->cap);
	}
	memcpy(s->data + s->len, raw, len);
	s->len += len;
	s->chunks++;
	return 0;
}

static void test_embed(void)
{
	const size_t fill = (5u << 20) / 2; /* 2.5 MiB: three pieces */
	uint8_t *file = malloc(fill + 4096);
	char p[4200];
	path_in(p, sizeof p, "module.so");
	size_t size = make_elf(file, 1, 4, ID, sizeof ID, fill);
	write_file(p, file, size);

	struct sink s = { 0 };
	struct mt_obj_out w = {
		.raw = malloc(MT_OBJ_BUF_MIN), .cap = MT_OBJ_BUF_MIN, .write = sink_write, .ctx = &s
	};
	CHECK_EQ(mt_obj_embed(&w, p, ID, sizeof ID), MT_OBJ_EMBEDDED);
	/* a file with no build-id known matches whatever it has */
	CHECK_EQ(mt_obj_embed(&w, p, NULL, 0), MT_OBJ_EMBEDDED);
	mt_obj_flush(&w);
	CHECK_EQ(w.failed, 0);
	CHECK_EQ(w.embedded, 2);
	CHECK_EQ(w.bytes, 2 * size);
	CHECK_EQ(s.chunks, 6); /* a buffer holds one piece */

	/* the pieces, in order, are the file twice: first with its build-id */
	struct mt_dec d = { s.data, s.data + s.len };
	struct mt_event ev;
	uint64_t at = 0;
	unsigned pieces = 0;
	while (mt_dec_next(&d, &ev) > 0) {
		CHECK_EQ(ev.type, MT_REC_EXT);
		CHECK_EQ(ev.value, MT_OBJECT_ELF);
		CHECK_EQ(ev.size, size);
		CHECK_EQ(ev.ptr, at % size);
		CHECK_EQ(ev.path.len, strlen(p));
		CHECK(!memcmp(ev.path.s, p, ev.path.len));
		CHECK_EQ(ev.build_id.len, at < size ? sizeof ID : 0);
		CHECK(at >= size || !memcmp(ev.build_id.s, ID, sizeof ID));
		CHECK_EQ(ev.text.len,
			 size - at % size < MT_OBJ_PIECE ? size - at % size : MT_OBJ_PIECE);
		CHECK(!memcmp(ev.text.s, file + at % size, ev.text.len));
		at += ev.text.len;
		pieces++;
	}
	CHECK(d.p == d.end);
	CHECK_EQ(at, 2 * size);
	CHECK_EQ(pieces, 6);

	/* left out, nothing written */
	size_t before = s.len;
	uint8_t other[sizeof ID];
	memcpy(other, ID, sizeof ID);
	other[0] ^= 1;
	CHECK_EQ(mt_obj_embed(&w, p, other, sizeof other), MT_OBJ_CHANGED);
	CHECK_EQ(mt_obj_embed(&w, p, ID, 8), MT_OBJ_CHANGED); /* a prefix is another id */
	char q[4200];
	path_in(q, sizeof q, "missing");
	errno = 0;
	CHECK_EQ(mt_obj_embed(&w, q, ID, sizeof ID), MT_OBJ_NO_FILE);
	CHECK(!strcmp(mt_obj_why(MT_OBJ_NO_FILE, errno), strerror(ENOENT)));
	path_in(q, sizeof q, "fifo");
	errno = 0;
	CHECK_EQ(mt_obj_embed(&w, q, NULL, 0), MT_OBJ_NO_FILE);
	CHECK(!strcmp(mt_obj_why(MT_OBJ_NO_FILE, errno), "not a regular file"));
	CHECK(strstr(mt_obj_why(MT_OBJ_CHANGED, 0), "build-id differs") != NULL);
	mt_obj_flush(&w);
	CHECK_EQ(s.len, before);
	CHECK_EQ(w.embedded, 2);

	/* a write that fails: said once, nothing written after it */
	s.fail = 1;
	CHECK_EQ(mt_obj_embed(&w, p, ID, sizeof ID), MT_OBJ_EMBEDDED);
	mt_obj_flush(&w);
	CHECK_EQ(w.failed, ENOSPC);
	s.fail = 0;
	CHECK_EQ(mt_obj_embed(&w, p, ID, sizeof ID), MT_OBJ_EMBEDDED);
	mt_obj_flush(&w);
	CHECK_EQ(s.len, before);
	CHECK_EQ(w.len, 0);

	free(w.raw);
	free(s.data);
	free(file);
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof dir, "%s/objects-XXXXXX", argc > 1 ? argv[1] : "/tmp");
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	test_build_id();
	test_self();
	test_debug_path();
	test_open();
	test_embed();
	static const char *names[] = { "elf", "regular", "fifo", "module.so" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		char p[4200];
		path_in(p, sizeof p, names[i]);
		unlink(p);
	}
	rmdir(dir);
	return failures ? 1 : 0;
}

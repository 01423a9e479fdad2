/*
 * test_embed.c - unit tests of the embedded binaries (collect/embed.c): what
 * goes in is the file the process mapped, whatever its name has become, and
 * a file that cannot be told to be that one is refused.  This process maps
 * files of its own temporary folder and declares them as MODULE records:
 *   - a file without a build-id, mapped, then its name swapped for a link to
 *     a 0600 secret: the mapped file goes in, the secret does not;
 *   - a file no process is known to map (pid 0): without a build-id it is
 *     refused; with one, only when everyone may read it;
 *   - past MT_EMBED_MAX_HELD held files, the file at the path must have the
 *     device and inode of the one mapped: a link to the secret is refused,
 *     the file left in place goes in.
 * The recording is read back with the format's reader.
 */
#include "collect/embed.h"
#include "format/codec.h"
#include "format/format.h"
#include "../check.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static const char secret[] = "MT-UNIT-SECRET-9e41\n";

static void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void put_file(const char *name, const void *data, size_t len, mode_t mode)
{
	char p[128];
	path_of(p, sizeof p, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len);
	if (fd >= 0)
		close(fd);
	CHECK(chmod(p, mode) == 0);
}

/* NAME replaced, in one rename, by a link to the secret. */
static void swap_for_link(const char *name)
{
	char p[128], tmp[140], target[128];
	path_of(p, sizeof p, name);
	path_of(target, sizeof target, "secret");
	snprintf(tmp, sizeof tmp, "%s.link", p);
	CHECK(symlink(target, tmp) == 0 && rename(tmp, p) == 0);
}

/* NAME mapped into this process: its address, of one page. */
static uint8_t *map_file(const char *name)
{
	char p[128];
	path_of(p, sizeof p, name);
	int fd = open(p, O_RDONLY);
	CHECK(fd >= 0);
	void *a = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(a != MAP_FAILED);
	close(fd);
	return a == MAP_FAILED ? NULL : a;
}

/* The MODULE record of NAME mapped at AT (NULL: nowhere), noted for PID. */
static void note(struct mt_embed *e, uint32_t pid, const char *name, const uint8_t *at,
		 const uint8_t *id, size_t idlen)
{
	char p[128];
	uint8_t rec[512];
	path_of(p, sizeof p, name);
	uint64_t lo = (uint64_t)(uintptr_t)at;
	uint8_t *end = mt_enc_module(rec, lo, lo, at ? lo + 4096 : 0, p, strlen(p), id, idlen);
	struct mt_dec d = { rec, end };
	struct mt_event ev;
	CHECK(mt_dec_next(&d, &ev) == 1 && ev.type == MT_REC_MODULE);
	mt_embed_note(e, pid, &ev);
}

/* An ELF64 file whose one PT_NOTE holds build-id ID (20 bytes). */
static size_t elf_with_id(uint8_t *out, const uint8_t id[20])
{
	Elf64_Ehdr eh = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_phoff = sizeof eh, .e_ehsize = sizeof eh,
			  .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	Elf64_Nhdr nh = { .n_namesz = 4, .n_descsz = 20, .n_type = NT_GNU_BUILD_ID };
	size_t at = sizeof eh + sizeof(Elf64_Phdr);
	Elf64_Phdr ph = { .p_type = PT_NOTE, .p_offset = at, .p_filesz = sizeof nh + 4 + 20,
			  .p_align = 4 };
	memcpy(out, &eh, sizeof eh);
	memcpy(out + sizeof eh, &ph, sizeof ph);
	memcpy(out + at, &nh, sizeof nh);
	memcpy(out + at + sizeof nh, "GNU", 4);
	memcpy(out + at + sizeof nh + 4, id, 20);
	return at + sizeof nh + 4 + 20;
}

/* The embedded file named NAME: its bytes (4096 at most) in BUF, its
 * length; 0 when it is not in the recording.  *SECRET_SEEN is set when any
 * piece holds the secret. */
static size_t embedded(const char *rec, const char *name, uint8_t *buf, int *secret_seen)
{
	char p[128], err[256];
	path_of(p, sizeof p, name);
	struct mt_file_reader r;
	size_t got = 0;
	if (mt_file_open(&r, rec, err, sizeof err) < 0) {
		fprintf(stderr, "%s\n", err);
		CHECK(0);
		return 0;
	}
	uint32_t stream;
	const uint8_t *data;
	size_t len;
	while (mt_file_next(&r, &stream, &data, &len) > 0) {
		if (stream != MT_STREAM_OBJECTS)
			continue;
		struct mt_dec d = { data, data + len };
		struct mt_event ev;
		while (mt_dec_next(&d, &ev) > 0) {
			if (ev.type != MT_REC_EXT || ev.ext != MT_EXT_OBJECT)
				continue;
			if (memmem(ev.text.s, ev.text.len, secret, sizeof secret - 1))
				*secret_seen = 1;
			if (ev.value == MT_OBJECT_ELF && ev.path.len == strlen(p) &&
			    !memcmp(ev.path.s, p, ev.path.len) && ev.ptr + ev.text.len <= 4096) {
				memcpy(buf + ev.ptr, ev.text.s, ev.text.len);
				got = ev.ptr + ev.text.len;
			}
		}
	}
	mt_file_close(&r);
	return got;
}

int main(void)
{
	strcpy(dir, "/tmp/mt-test-embed-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	uint32_t self = (uint32_t)getpid();
	uint8_t page[4096], id[20], elf[4096], buf[4096];
	for (size_t i = 0; i < sizeof id; i++)
		id[i] = (uint8_t)(0xa0 + i);
	size_t elf_len = elf_with_id(elf, id);
	memset(page, 'm', sizeof page);
	memcpy(page, "MT-UNIT-MAPPED", 14);

	put_file("secret", secret, sizeof secret - 1, 0600);
	put_file("mapped", page, sizeof page, 0644);
	put_file("gone", page, sizeof page, 0644);
	put_file("gone-id-private", elf, elf_len, 0600);
	put_file("gone-id-public", elf, elf_len, 0644);

	struct mt_embed *e = mt_embed_new(1);
	note(e, self, "mapped", map_file("mapped"), NULL, 0);
	swap_for_link("mapped"); /* after it was noted: the owner's swap */
	note(e, 0, "gone", NULL, NULL, 0);
	note(e, 0, "gone-id-private", NULL, id, sizeof id);
	note(e, 0, "gone-id-public", NULL, id, sizeof id);
	/* the held files used up, then two more mapped */
	for (int i = 0; i < MT_EMBED_MAX_HELD; i++) {
		char name[32];
		snprintf(name, sizeof name, "filler%d", i);
		put_file(name, page, sizeof page, 0644);
		note(e, self, name, map_file(name), NULL, 0);
	}
	put_file("late-swapped", page, sizeof page, 0644);
	put_file("late-kept", page, sizeof page, 0644);
	note(e, self, "late-swapped", map_file("late-swapped"), NULL, 0);
	note(e, self, "late-kept", map_file("late-kept"), NULL, 0);
	swap_for_link("late-swapped");

	char rec[128], err[256];
	path_of(rec, sizeof rec, "out.mtrace");
	int fd = mt_file_create(rec);
	CHECK(fd >= 0);
	CHECK(mt_embed_write(e, fd, rec, err, sizeof err) == 0);
	mt_embed_free(e);
	close(fd);

	int seen = 0;
	CHECK_EQ(embedded(rec, "mapped", buf, &seen), sizeof page);
	CHECK(!memcmp(buf, page, sizeof page));
	CHECK_EQ(embedded(rec, "gone", buf, &seen), 0);
	CHECK_EQ(embedded(rec, "gone-id-private", buf, &seen), 0);
	CHECK_EQ(embedded(rec, "gone-id-public", buf, &seen), elf_len);
	CHECK_EQ(embedded(rec, "filler7", buf, &seen), sizeof page);
	CHECK_EQ(embedded(rec, "late-swapped", buf, &seen), 0);
	CHECK_EQ(embedded(rec, "late-kept", buf, &seen), sizeof page);
	CHECK(!seen);

	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return failures ? 1 : 0;
}

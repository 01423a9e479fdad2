/*
 * gt_dlalloc.c - ground truth for objects mapped later: prints "ready",
 * waits for a line, dlopens the allocator library given as argument and
 * prints "loaded", waits for a line, then allocates through the library's
 * own malloc, calloc, realloc and free (looked up with dlsym) and prints
 * what it did:
 *   A FN SIZE PTR / R FN SIZE OLD NEW / F FN PTR
 * then "done", and waits for stdin to close.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char out[4096];
static size_t len;
#define LOG(...) (len += snprintf(out + len, sizeof(out) - len, __VA_ARGS__))

static void say(const char *s, size_t n)
{
	if (write(1, s, n) != (ssize_t)n)
		_exit(1);
}

static int wait_line(void)
{
	char b[64];
	return read(0, b, sizeof(b)) > 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	say("ready\n", 6);
	if (!wait_line())
		return 1;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		LOG("dlopen: %s\n", dlerror());
		say(out, len);
		return 1;
	}
	void *(*m)(size_t) = (void *(*)(size_t))dlsym(h, "malloc");
	void *(*c)(size_t, size_t) = (void *(*)(size_t, size_t))dlsym(h, "calloc");
	void *(*r)(void *, size_t) = (void *(*)(void *, size_t))dlsym(h, "realloc");
	void (*f)(void *) = (void (*)(void *))dlsym(h, "free");
	say("loaded\n", 7);
	if (!wait_line())
		return 1;
	void *p = m(100);
	LOG("A malloc 100 %p\n", p);
	void *q = c(3, 10);
	LOG("A calloc 30 %p\n", q);
	void *p2 = r(p, 500);
	LOG("R realloc 500 %p %p\n", p, p2);
	f(q);
	LOG("F free %p\n", q);
	LOG("done\n");
	say(out, len);
	while (wait_line())
		;
	return 0;
}

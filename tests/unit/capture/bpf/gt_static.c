/*
 * gt_static.c - a statically linked program, built twice: stripped (no
 * symbols: no allocator can be found in it) and with symbols (its own
 * malloc gets the probes).  Allocates a little, prints "ready", and waits
 * for stdin to close.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char buf[16];
	void *volatile p = malloc(100);

	free(p);
	if (write(1, "ready\n", 6) != 6)
		return 1;
	while (read(0, buf, sizeof(buf)) > 0) {
		p = malloc(200);
		free(p);
	}
	return 0;
}

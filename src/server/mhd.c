/*
 * mhd.c - see mhd.h.
 */
#include "mhd.h"

#include <dlfcn.h>
#include <stdio.h>

struct mt_mhd mt_mhd;

int mt_mhd_load(char *err, size_t errlen)
{
	if (mt_mhd.start_daemon)
		return 0;
	/* the ABI of every libmicrohttpd since 0.9.38 (2014); the unversioned
	 * name is the development package's link */
	void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libmicrohttpd.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen,
			 "cannot load libmicrohttpd.so.12 (%s); tools/setup.sh installs it",
			 dlerror());
		return -1;
	}
	struct mt_mhd m;
	const char *missing = NULL;
#define SYM(f)                                                           \
	do {                                                             \
		if (!(*(void **)&m.f = dlsym(h, "MHD_" #f)) && !missing) \
			missing = "MHD_" #f;                             \
	} while (0)
	SYM(start_daemon);
	SYM(stop_daemon);
	SYM(lookup_connection_value);
	SYM(get_connection_values);
	SYM(get_connection_info);
	SYM(add_response_header);
	SYM(create_response_from_buffer);
	SYM(create_response_from_callback);
	SYM(queue_response);
	SYM(destroy_response);
#undef SYM
	if (missing) {
		snprintf(err, errlen, "libmicrohttpd has no %s: too old a version", missing);
		dlclose(h);
		return -1;
	}
	mt_mhd = m;
	return 0;
}

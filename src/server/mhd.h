/*
 * mhd.h - libmicrohttpd, loaded when `memtrace server` starts rather than
 * with every command.  Linked in, it and the TLS libraries it needs (GnuTLS,
 * p11-kit, Nettle, GMP...) are mapped and relocated by every run of
 * memtrace: 2.4 MB resident for a `report` that never serves anything, a
 * sixteenth of what reading a big recording takes.  server.c calls it
 * through mt_mhd, its functions by the same names without the MHD_ prefix.
 */
#ifndef MEMTRACE_SERVER_MHD_H
#define MEMTRACE_SERVER_MHD_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

struct mt_mhd {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_lookup_connection_value) *lookup_connection_value;
	__typeof__(MHD_get_connection_values) *get_connection_values;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_create_response_from_callback) *create_response_from_callback;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
};

extern struct mt_mhd mt_mhd;

/* Loads the library (once): 0, or -1 with a one-line reason in ERR. */
int mt_mhd_load(char *err, size_t errlen);

#endif

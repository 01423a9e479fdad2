/* preload.c - stub */

/* util.c - stub */

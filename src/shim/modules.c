/* modules.c - stub */

/* symbols.c - stub */

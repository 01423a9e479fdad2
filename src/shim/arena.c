/* arena.c - stub */

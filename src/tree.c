/* tree.c - stub */

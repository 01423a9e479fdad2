/* stacktab.c - stub */

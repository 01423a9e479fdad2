/* report.c - stub */

/* collector.c - stub */

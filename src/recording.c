/* recording.c - stub */

/* unwind_x86_64.c - stub */

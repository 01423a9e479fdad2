/* cmd_record.c - stub */

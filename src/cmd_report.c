/* cmd_report.c - stub */

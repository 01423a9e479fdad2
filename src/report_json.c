/* report_json.c - stub */

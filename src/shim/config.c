/* config.c - stub */

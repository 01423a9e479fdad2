/* channel.c - stub */

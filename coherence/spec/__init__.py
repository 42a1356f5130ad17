"""The front end: parse a .coh file, check it, and lower it to the IR."""

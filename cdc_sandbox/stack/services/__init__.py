"""One module per service of the stack; each knows how to prepare, start, probe and stop itself natively."""

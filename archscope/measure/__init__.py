"""Things that run or inspect the built model: counted params, FLOP counters, profilers."""

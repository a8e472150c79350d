"""Running a strategy's layers over a message list: the engine, traces, alignment, sizes."""

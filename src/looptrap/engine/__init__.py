"""The sans-IO decision core: the configuration (what every process shares) and the engine (pure functions of
configuration, session state, input and time)."""

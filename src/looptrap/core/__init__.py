"""The core: vocabulary, signatures, state, configuration, the decision engine and the Guard driver."""

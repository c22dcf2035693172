"""The C source of the basic-block timing harness (harness.c); engine.surrogates.difftune.measure builds and drives it."""

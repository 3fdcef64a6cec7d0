"""Tests of the LlamaIndex adapters (a package, so module names cannot clash with other suites)."""

"""Imported first by the package: without the ``llamaindex`` extra, one clear error."""

from oblivion_core.extras import require

require("oblivion_llamaindex", ("llama_index.core", "pydantic"), "llamaindex")

"""Imported first by the package: without the ``langchain`` extra, one clear error."""

from oblivion_core.extras import require

require(
    "oblivion_langchain",
    ("langchain_core", "langchain", "langgraph", "langchain_classic"),
    "langchain",
)

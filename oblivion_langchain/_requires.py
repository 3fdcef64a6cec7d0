"""Imported first by the package: without the ``langchain`` extra, or with a release
older than the code needs, one clear error."""

from oblivion_core.extras import require

require(
    "oblivion_langchain",
    ("langchain_core", "langchain", "langgraph", "langchain_classic"),
    "langchain",
    # ModelRequest.system_message (the middleware), langgraph.store.base's
    # validate_op_namespace (the LangGraph store): as pyproject.toml's bounds
    minimum={"langchain": "1.1", "langgraph-checkpoint": "4.3"},
)

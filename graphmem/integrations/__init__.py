"""Adapters to agent frameworks (optional: ``pip install -e ".[integrations]"``).

- :mod:`graphmem.integrations.langchain_retriever`: a LangChain ``BaseRetriever`` over a Memory.
- :mod:`graphmem.integrations.langgraph_store`: a LangGraph long-term memory ``BaseStore``.

Nothing here is imported by ``import graphmem``: each module imports its framework when used.
"""

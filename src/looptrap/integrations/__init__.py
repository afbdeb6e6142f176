"""Where looptrap meets other software: agent frameworks (``langchain``, ``openai_agents``, ``pydantic_ai``,
``smolagents``, ``adk``, ``crewai``, ``strands``, the ``openai`` and ``anthropic`` SDKs), coding-agent CLI hooks
(``hooks``) and the MCP proxy (``mcp_proxy``).

Each integration is imported on its own (``import looptrap.integrations.mcp_proxy``); this package imports
nothing, so ``import looptrap`` never pulls in a framework.
"""

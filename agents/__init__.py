"""The node agent: one asyncio process per emulated node."""

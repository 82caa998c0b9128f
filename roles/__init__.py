"""Role definitions and the runner that executes inside a role container.

A role (today: the MemoryOracle) runs as ``python -m roles.runner`` in the hardened role image built by
:mod:`supervisor.image._build`. Its only channel to the world is the per-launch Unix socket the supervisor
mounts; it reaches the MCP tools of its capability grant as a client, over that socket, and imports
nothing from ``supervisor``.
"""

__all__: list[str] = []

"""Building the role image offline (a debootstrap base, host-built wheels) and inspecting it; building
the example agent image on top of it."""

from __future__ import annotations

from supervisor.image._build import build_role_image, inspect_role_image, role_image_tag
from supervisor.image._example import build_example_agent, build_example_agent_image, example_agent_tag

__all__ = [
    "build_example_agent",
    "build_example_agent_image",
    "build_role_image",
    "example_agent_tag",
    "inspect_role_image",
    "role_image_tag",
]

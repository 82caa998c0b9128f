"""Building the role image offline (a debootstrap base, host-built wheels) and inspecting it."""

from __future__ import annotations

from supervisor.image._build import build_role_image, inspect_role_image, role_image_tag

__all__ = ["build_role_image", "inspect_role_image", "role_image_tag"]

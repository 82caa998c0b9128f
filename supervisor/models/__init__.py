"""How the supervisor reaches a model: the gateway role containers call, and memory resynthesis."""

from __future__ import annotations

from supervisor.models._gateway import ModelFailure, ModelGateway
from supervisor.models._resynthesis import synthesizer_for

__all__ = ["ModelFailure", "ModelGateway", "synthesizer_for"]

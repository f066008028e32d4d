"""How requests are sent: their order, and the routing key that keeps a prefix group on one replica."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..serving.routing import ROUTER_KEY_HEADERS, check_routing_key_header
from ..vocabulary import RequestOrder


class SendingParams(BaseModel):
    """Request-sending parameters (part of ``NiahParams``, flat ``extra_params`` names)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    request_order: RequestOrder = Field(
        'prefix',
        description="'prefix': requests ordered so a server with automatic prefix caching reuses the most; 'grid': "
        "lengths outer, depths inner, as the built-in sends them; 'replicas': the prefix order with the haystack "
        'starts taking turns, so the requests in flight spread over the replicas behind a router that routes on '
        'routing_key_header (for servers with a shared prefix cache: vLLM, SGLang). In both prefix orders a prompt '
        'whose prefix an earlier prompt in flight is computing waits for it.',
    )
    routing_key_header: str = Field(
        'on',
        description="Key of each prompt's prefix group (subset, haystack start) sent as a request header, so a "
        "router's consistent-hash policy keeps the group on one replica and its shared prefix cached: 'on' "
        f"({', '.join(ROUTER_KEY_HEADERS)}: vllm-router, sglang-router), 'off', or a custom header name.",
    )

    @field_validator('routing_key_header', mode='before')
    @classmethod
    def _routing_key_header(cls, value: Any) -> str:
        return check_routing_key_header(value)

"""NiahParams is assembled from groups: every run parameter belongs to exactly one group, each group checks its own
values, and the assembled model checks them the same way."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from evalscope_niah.errors import NiahConfigError
from evalscope_niah.params.aliases import AliasParams
from evalscope_niah.params.grading import ScoringParams
from evalscope_niah.params.grid import GridParams
from evalscope_niah.params.kamradt_names import KamradtParams
from evalscope_niah.params.limits import LimitsParams
from evalscope_niah.params.placement import PlacementParams
from evalscope_niah.params.request_routing import SendingParams
from evalscope_niah.params.run_params import NiahParams, TaskParams
from evalscope_niah.params.subsets import SubsetParams
from evalscope_niah.params.sweep import SweepParams

GROUPS: tuple[type[BaseModel], ...] = (
    SubsetParams,
    GridParams,
    SweepParams,
    PlacementParams,
    ScoringParams,
    SendingParams,
    AliasParams,
    KamradtParams,
    LimitsParams,
)


def test_every_run_parameter_is_in_exactly_one_group() -> None:
    owners: dict[str, list[str]] = {}
    for group in GROUPS:
        for name in group.model_fields:
            owners.setdefault(name, []).append(group.__name__)
    assert {name: groups for name, groups in owners.items() if len(groups) > 1} == {}
    assert set(owners) == set(NiahParams.model_fields)
    # The spec lists the groups in this order (see the bases of NiahParams).
    assert list(NiahParams.model_fields) == [name for group in GROUPS for name in group.model_fields]


def test_each_default_is_the_groups_own() -> None:
    defaults = NiahParams()
    for group in GROUPS:
        for name, value in group().model_dump().items():
            assert getattr(defaults, name) == value, name


@pytest.mark.parametrize(
    ('group', 'values', 'fragment'),
    [
        (GridParams, {'context_lengths_min': 0}, 'positive number of tokens'),
        (GridParams, {'context_lengths_min': 5000, 'context_lengths_max': 1000}, 'larger than context_lengths_max'),
        (SubsetParams, {'needles': []}, 'needles'),
        (PlacementParams, {'start_buffer': -1}, 'must be 0 or more'),
        (ScoringParams, {'effective_length_threshold': 0}, 'must be in (0, 1]'),
        (SendingParams, {'routing_key_header': ''}, 'routing_key_header'),
        (AliasParams, {'min_context': 2000, 'context_lengths_min': 1000}, "mixes inspect_evals' niah names"),
        (LimitsParams, {'max_corpus_repeats': 0}, 'must be at least 1'),
        (SweepParams, {'sweep_confidence': 1.5}, 'between 0.5 and 1'),
    ],
)
def test_a_group_refuses_its_bad_values_and_so_does_the_run_model(
    group: type[BaseModel], values: dict, fragment: str
) -> None:
    """The checks live in the group; the assembled model runs them (AliasParams maps names the run model holds)."""
    for model in (group, NiahParams) if group is not AliasParams else (NiahParams,):
        with pytest.raises((ValidationError, NiahConfigError)) as info:
            model.model_validate(values)
        assert fragment in str(info.value), model.__name__


def test_the_run_model_holds_no_task_parameter() -> None:
    for name in ('needle_bank', 'n_needles', 'sample_method', 'fixed_index', 'n_runs', 'num_needles'):
        assert name not in NiahParams.model_fields
    assert TaskParams.model_fields == {}

"""What a campaign may be asked to be: overrides that mean something, and the budget of a
campaign that names none (workflow/campaign/expand.py applies both)."""

from __future__ import annotations

from typing import Any

from workflow.campaign.errors import CampaignError

MAX_DURATION_S = 86400  # the schemas' largest window (campaign and cell)
# A campaign without budget_min is planned up to a working night: a typo (duration_s: 3600 for
# 36) must not start a 100-hour campaign unasked.
DEFAULT_BUDGET_MIN = 8 * 60


def check_overrides(repetitions: Any, duration_s: Any) -> None:
    """An override that is given must mean something: 0 repetitions or a 0 s window used to be
    ignored silently (the file's value ran instead)."""
    if repetitions is not None and (
        isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1
    ):
        raise CampaignError(
            f"override repetitions (--repetitions, config repetitions=): expected an integer "
            f">= 1, got {repetitions!r}"
        )
    if duration_s is not None and (
        isinstance(duration_s, bool)
        or not isinstance(duration_s, int | float)
        or not 0 < float(duration_s) <= MAX_DURATION_S
    ):
        raise CampaignError(
            f"override duration_s (--duration-s, config duration_s=): expected seconds > 0 and "
            f"<= {MAX_DURATION_S}, got {duration_s!r}"
        )

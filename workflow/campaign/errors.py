"""The campaign stage's one error type."""

from __future__ import annotations


class CampaignError(ValueError):
    """A campaign is invalid; the message names the file and the key and what was expected."""

"""The one reader of the project's YAML configuration (campaigns, manifests, network profiles):
yaml.safe_load that refuses a key given twice in one mapping. It sits in the contract, the lowest
stage that reads YAML (a prototype's manifest), so every stage above reads through it."""

from __future__ import annotations

from typing import Any

import yaml


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of a YAML file names one key twice (PyYAML keeps the last silently)."""


class _UniqueKeys(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping."""


def _unique_mapping(loader: _UniqueKeys, node: yaml.MappingNode, deep: bool = False) -> Any:
    first: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # << merges another mapping's keys
            continue
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in first:
            raise DuplicateKeyError(
                f"line {line}: key {key!r} given twice (first on line {first[key]}); "
                "expected each key once"
            )
        first[key] = line
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def load_yaml(text: str) -> Any:
    """yaml.safe_load that raises DuplicateKeyError for a key given twice in one mapping (the
    one YAML reader of the project's configuration: campaigns, manifests, network profiles)."""
    return yaml.load(text, Loader=_UniqueKeys)  # a SafeLoader: no arbitrary objects

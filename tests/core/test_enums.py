"""``StrEnum`` (aftertrain.core.enums): a member is its string value
wherever a string is read: compared, printed, formatted and written as JSON."""

from __future__ import annotations

import json

from aftertrain.core.enums import StrEnum


class Colour(StrEnum):
    RED = "red"
    DARK_BLUE = "dark blue"


def test_a_member_equals_prints_formats_and_serialises_as_its_value():
    assert Colour.RED == "red" and "red" == Colour.RED
    assert str(Colour.DARK_BLUE) == "dark blue" and f"{Colour.DARK_BLUE}" == "dark blue"
    assert f"{Colour.RED:>5}|" == "  red|"  # a format spec applies to the value
    assert json.dumps({"c": Colour.RED}) == '{"c": "red"}'
    assert Colour("dark blue") is Colour.DARK_BLUE
    assert {Colour.RED: 1}["red"] == 1  # hashes as its value


def test_a_plain_enum_would_print_its_name_not_its_value():
    """The check above can fail: Enum's own __str__ gives the qualified
    name, which StrEnum replaces."""
    from enum import Enum

    class Plain(str, Enum):
        RED = "red"

    assert str(Plain.RED) == "Plain.RED" and str(Colour.RED) == "red"

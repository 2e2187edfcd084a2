"""One list of allowed values: the enums and the JSON Schema's enums say the same."""

from hwprobe import vocab
from hwprobe.profile import schema


def test_schema_enums_match_the_vocabulary():
    s = schema()
    compute = s["properties"]["compute"]
    assert tuple(compute["propertyNames"]["enum"]) == vocab.PROFILE_PRECISIONS
    assert set(compute["additionalProperties"]["propertyNames"]["enum"]) == set(vocab.ExecUnit.values())
    paths = set(compute["additionalProperties"]["additionalProperties"]["propertyNames"]["enum"])
    assert paths == {p for base in vocab.Path.values() for p in (base, base + "_sparse24")}
    assert tuple(s["$defs"]["ceiling"]["properties"]["unit"]["enum"]) == vocab.CEILING_UNITS


def test_profile_precisions_are_the_measured_ones_with_fp8_folded():
    folded = {vocab.profile_precision(p) for p in vocab.Precision.values()}
    assert folded == set(vocab.PROFILE_PRECISIONS)


def test_words_compare_as_plain_strings():
    assert vocab.Status.ERROR == "error" and str(vocab.Kind.MAP) == "map"


def test_stop_reasons_are_the_schemas():
    enum = schema()["$defs"]["ceiling"]["properties"]["stop_reason"]["enum"]
    assert [e for e in enum if e is not None] == list(vocab.StopReason.values())

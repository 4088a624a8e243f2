"""The schema strings the Schema Registry API answers (apps.registry.formats.schema_text), case by
case. Each Avro expectation is what Apache Avro's Java library writes for the schema
(`new Schema.Parser().parse(text).toString()`), as checked against it when this was
written (and, over thousands of generated schemas, byte for byte)."""

import json

import pytest

from apps.registry.formats import avro, schema_text

AVRO_CASES = [
    (
        '{"type":"record","name":"A","namespace":"n1","aliases":["OldA","n1.OlderA","x.Y"],"fields":[{"name":"b","type":{"type":"record","name":"B","namespace":"","fields":[{"name":"c","type":{"type":"enum","name":"C","namespace":"n2","symbols":["X"]}}]}},{"name":"d","type":"n2.C","order":"DESCENDING","aliases":["dd","dd","e"]},{"name":"f","type":"double","default":1e3},{"name":"g","type":{"type":"fixed","name":"n1.G","size":16,"doc":"sixteen"}},{"name":"h","type":"G"},{"name":"i","type":{"type":"map","values":{"type":"array","items":"long","namespace":"dropped"}},"x":{"z":1,"a":[0.1,1e-7,-0.0,12345678.5]}}]}',
        '{"type":"record","name":"A","namespace":"n1","fields":[{"name":"b","type":{"type":"record","name":"B","namespace":"","fields":[{"name":"c","type":{"type":"enum","name":"C","namespace":"n2","symbols":["X"]}}]}},{"name":"d","type":"n2.C","order":"descending","aliases":["dd","e"]},{"name":"f","type":"double","default":1000.0},{"name":"g","type":{"type":"fixed","name":"G","doc":"sixteen","size":16}},{"name":"h","type":"G"},{"name":"i","type":{"type":"map","values":{"type":"array","items":"long"}},"x":{"z":1,"a":[0.1,1.0E-7,-0.0,1.23456785E7]}}],"aliases":["OldA","OlderA","x.Y"]}',
    ),
    (
        '"int"',
        '"int"',
    ),
    (
        '{"type":"int","name":"dropped","x":"ctl\\u0001 \\u00e9 \\"q\\" \\\\ /"}',
        '{"type":"int","x":"ctl\\u0001 é \\"q\\" \\\\ /"}',
    ),
    (
        '["null",{"type":"error","name":"E","fields":[]}]',
        '["null",{"type":"error","name":"E","fields":[]}]',
    ),
]


@pytest.mark.parametrize(("sent", "written"), AVRO_CASES)
def test_an_avro_schema_is_written_as_avro_java_writes_it(sent, written):
    avro.parse_schema(sent)  # a schema the registry accepts
    assert schema_text("AVRO", sent) == written
    # and the string read again is the same schema (the same encoding), written the same
    assert avro.canonical(written) == avro.canonical(sent)
    assert schema_text("AVRO", written) == written


def test_the_types_references_define_are_written_by_name():
    named = avro.named_types({"type": "record", "name": "com.acme.Address", "fields": []})
    sent = {
        "type": "record",
        "name": "Order",
        "namespace": "com.acme",
        "fields": [
            {"name": "ship_to", "type": "com.acme.Address"},
            {"name": "other", "type": ["null", "Address"], "default": None},
        ],
    }
    assert schema_text("AVRO", sent, named=named) == (
        '{"type":"record","name":"Order","namespace":"com.acme","fields":['
        '{"name":"ship_to","type":"Address"},'
        '{"name":"other","type":["null","Address"],"default":null}]}'
    )


@pytest.mark.parametrize(
    ("sent", "written"),
    [
        # key order kept, whitespace gone, fractions and exponents as BigDecimal writes them
        (
            '{ "type" : "number", "multipleOf": 0.010, "maximum": 1e3, "minimum": -0.0 }',
            '{"type":"number","multipleOf":0.010,"maximum":1E+3,"minimum":0.0}',
        ),
        ('{"b": 1, "a": [true, null, "\\u00e9"]}', '{"b":1,"a":[true,null,"\u00e9"]}'),
        ('{"description": "\\u001f"}', '{"description":"\\u001F"}'),
        ("true", "true"),
    ],
)
def test_a_json_schema_is_written_as_jackson_writes_its_tree(sent, written):
    assert schema_text("JSON", sent) == written


def test_normalize_sorts_a_json_schemas_keys():
    sent = '{"type": "object", "properties": {"b": {"type": "string"}, "a": {"maximum": 1.50}}}'
    assert schema_text("JSON", sent, normalize=True) == (
        '{"properties":{"a":{"maximum":1.50},"b":{"type":"string"}},"type":"object"}'
    )
    assert json.loads(schema_text("JSON", sent)) == json.loads(sent)

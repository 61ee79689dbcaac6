function sync(request) {
  var value = {b: 1, a: [true, null, 1.5, "x<&>"]};
  return {
    encode: json.encode(value),
    decode: json.decode('{"n": 3.0, "f": 2.5, "l": [1, "s", null, false]}'),
    indent: json.indent({a: [1], b: {}}),
    indent_text: json.indent('{"z":1,"a":[2]}', ">", "\t"),
    roundtrip: json.decode(json.encode(request.parent.metadata.labels)),
  };
}

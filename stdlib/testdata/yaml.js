function sync(request) {
  return {
    encode: yaml.encode({name: "web", ports: [80, 443], on: true}),
    decode: yaml.decode("a: 1\nb: [2.5, 3.0, x]\nc:\n  d: true\ne: null\n"),
    empty: yaml.decode(""),
    labels: yaml.decode(yaml.encode(request.parent.metadata.labels)),
  };
}

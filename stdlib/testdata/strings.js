function sync(request) {
  var name = request.parent.metadata.name;
  return {
    has_prefix: [strings.has_prefix(name, "Corner"), strings.has_prefix(name, "shop")],
    has_suffix: strings.has_suffix(name, "_Shop"),
    contains: strings.contains("seafood", "foo"),
    contains_any: strings.contains_any("failure", "uix"),
    count: [strings.count("cheese", "e"), strings.count("héllo", "")],
    equal_fold: strings.equal_fold("Go", "GO"),
    lower: strings.lower(name),
    upper: strings.upper("àb"),
    trim_space: strings.trim_space(" \t x y \n"),
    trim: strings.trim("xx-a-xx", "x-"),
    trim_left: strings.trim_left("xx-a-xx", "x"),
    trim_right: strings.trim_right("xx-a-xx", "x"),
    trim_prefix: strings.trim_prefix("prefix-name", "prefix-"),
    trim_suffix: strings.trim_suffix("a.yaml", ".yaml"),
    split: [strings.split("a,b,,c", ","), strings.split("a,b,c", ",", 2), strings.split("hé", "")],
    fields: strings.fields("  a \t b\nc  "),
    cut: [strings.cut("key=value=x", "="), strings.cut("key", "=")],
    join: strings.join(["a", "b", "c"], ", "),
    replace: [strings.replace("oink oink oink", "k", "ky"), strings.replace("oink oink oink", "oink", "moo", 2)],
    repeat: strings.repeat("ab", 3),
    length: strings.length("héllo😀"),
  };
}

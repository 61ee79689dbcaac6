function sync(request) {
  return {
    match: [re.match("^web-\\d+$", "web-12"), re.match("\\d", "none")],
    find: [re.find("\\d+", "abc 123 456"), re.find("\\d", "abc")],
    find_all: [re.find_all("\\d+", "a1 b22 c333"), re.find_all("\\d+", "a1 b22 c333", 2)],
    find_submatch: re.find_submatch("(\\w+)=(\\d+)?(x)?", "key=42"),
    replace: re.replace("(?P<user>\\w+)@(\\w+)", "bob@example alice@corp", "$2/${user}_$$"),
    split: [re.split("\\s*,\\s*", "a , b,c"), re.split(",", "a,b,c", 2)],
    quote_meta: re.quote_meta("1.5+x"),
  };
}

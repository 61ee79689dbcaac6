function sync(request) {
  return re.match("a(", "a");
}

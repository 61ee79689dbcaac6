function sync(request) {
  return hash.sha256("a", "b");
}

function sync(request) {
  return strings.repeat("x", 1099511627776);
}
